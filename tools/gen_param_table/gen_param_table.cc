// Prints the markdown table of the NCCL_* variables Braid honours, or with `--update FILE`
// replaces the section between `<!-- params:begin -->` and `<!-- params:end -->` in FILE.
// tests/unit/readme_params_test fails until the README matches; this is the fix it suggests.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "util/params.h"
#include "util/params_doc.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

void printUsage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s              print the table of environment variables\n"
               "       %s --update FILE  rewrite the table between %s and %s in FILE\n",
               argv0, argv0, braid::kParamsBeginMarker, braid::kParamsEndMarker);
}

bool readWholeFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Writes next to the target and renames over it, so that an interrupted run never leaves a
// half-written README.
bool replaceFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

int update(const std::string& path) {
  std::string document;
  if (!readWholeFile(path, &document)) {
    std::fprintf(stderr, "gen_param_table: cannot read %s: %s\n", path.c_str(), std::strerror(errno));
    return kExitFailure;
  }
  std::string updated;
  if (!braid::replaceParamsSection(document, braid::paramsMarkdownTable(), &updated)) {
    std::fprintf(stderr, "gen_param_table: %s has no '%s' line followed by a '%s' line\n", path.c_str(),
                 braid::kParamsBeginMarker, braid::kParamsEndMarker);
    return kExitFailure;
  }
  if (updated == document) {
    std::printf("%s is up to date\n", path.c_str());
    return 0;
  }
  if (!replaceFile(path, updated)) {
    std::fprintf(stderr, "gen_param_table: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return kExitFailure;
  }
  std::printf("updated the table of environment variables in %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::fputs(braid::paramsMarkdownTable().c_str(), stdout);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--update") == 0) return update(argv[2]);
  printUsage(argv[0]);
  return kExitUsage;
}
