#include "util/config_file.h"

#include <cerrno>
#include <cstdio>
#include <memory>

#include "util/text.h"

namespace braid {

namespace {

// A config file larger than this is certainly not an NCCL config file; refusing it keeps a
// mistaken NCCL_CONF_FILE=/dev/zero from eating memory.
constexpr size_t kMaxConfigBytes = 1 << 20;

bool isNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool isValidName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!isNameChar(c)) return false;
  }
  return true;
}

// Cuts a trailing "  # comment" off a value. A '#' glued to text ("a#b") is kept as data, so
// that values containing '#' remain expressible.
std::string_view stripTrailingComment(std::string_view value) {
  for (size_t i = 1; i < value.size(); ++i) {
    if (value[i] == '#' && (value[i - 1] == ' ' || value[i - 1] == '\t')) return value.substr(0, i);
  }
  return value;
}

std::string lineLabel(const std::string& path, int line) { return path + ":" + std::to_string(line); }

void parseLine(std::string_view raw, const std::string& path, int lineNo, ConfigValues* values,
               std::vector<std::string>* problems) {
  std::string_view line = trimWhitespace(raw);
  if (line.empty() || line[0] == '#') return;

  size_t eq = line.find('=');
  if (eq == std::string_view::npos) {
    problems->push_back(lineLabel(path, lineNo) + ": expected NAME=value, got '" + std::string(line) +
                        "'; line ignored");
    return;
  }
  std::string_view name = trimWhitespace(line.substr(0, eq));
  if (!isValidName(name)) {
    problems->push_back(lineLabel(path, lineNo) + ": '" + std::string(name) +
                        "' is not a valid variable name; line ignored");
    return;
  }
  std::string_view value = trimWhitespace(stripTrailingComment(line.substr(eq + 1)));
  // emplace keeps the first occurrence: the earliest definition wins, as between files.
  values->emplace(std::string(name), ConfigValue{std::string(value), path, lineNo});
}

}  // namespace

void parseConfigText(std::string_view text, const std::string& path, ConfigValues* values,
                     std::vector<std::string>* problems) {
  int lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    ++lineNo;
    parseLine(line, path, lineNo, values, problems);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

ncclResult_t readConfigFile(const std::string& path, ConfigValues* values, std::vector<std::string>* problems,
                            int* errnoOut) {
  *errnoOut = 0;
  // "re": close-on-exec, so that a child exec'd while we read does not inherit the descriptor.
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "re"), &std::fclose);
  if (!file) {
    *errnoOut = errno;
    return ncclSystemError;
  }
  std::string text;
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file.get())) > 0) {
    text.append(chunk, n);
    if (text.size() > kMaxConfigBytes) {
      *errnoOut = EFBIG;
      return ncclSystemError;
    }
  }
  if (std::ferror(file.get())) {
    *errnoOut = errno != 0 ? errno : EIO;
    return ncclSystemError;
  }
  parseConfigText(text, path, values, problems);
  return ncclSuccess;
}

}  // namespace braid
