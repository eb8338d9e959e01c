// The harnesses' main() when they are built without libFuzzer: runs LLVMFuzzerTestOneInput once
// on every file named on the command line or found in a directory named there (a corpus), so that
// the ordinary build checks each committed corpus as a CPU test. A crash or a failed invariant
// aborts; an empty corpus is a failure too, so that a lost corpus does not pass silently.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", file.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy of exactly the file's size, so that AddressSanitizer sees reads past the input.
  std::vector<uint8_t> input(bytes.begin(), bytes.end());
  (void)LLVMFuzzerTestOneInput(input.empty() ? nullptr : input.data(), input.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t ran = 0;
  size_t failed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.push_back(arg);
    }
    for (const auto& file : files) {
      if (replay(file)) {
        ++ran;
      } else {
        ++failed;
      }
    }
  }
  // The empty input: every parser must refuse it without reading.
  (void)LLVMFuzzerTestOneInput(nullptr, 0);
  std::printf("%zu inputs replayed, %zu unreadable\n", ran, failed);
  return ran > 0 && failed == 0 ? 0 : 1;
}
