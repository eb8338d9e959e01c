// NCCL-style configuration files (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf).
//
// Format, one setting per line:
//   NAME=value        whitespace around NAME and value is ignored; the value may contain '='
//   # comment         a line whose first non-blank character is '#'
//   NAME=value # c    a '#' preceded by whitespace also starts a comment
// Blank lines are ignored. Anything else (no '=', an empty name, a name with blanks or
// characters other than [A-Za-z0-9_]) is malformed and reported with file:line.
//
// This parser never logs: it returns its complaints as text so that the parameter registry can
// emit them once it holds no lock (see params.cc for why that matters).
#pragma once

#include <nccl.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace braid {

struct ConfigValue {
  std::string value;
  std::string path;  // the file it came from, for paramSource and messages
  int line = 0;
};

// NAME -> value. When a name appears more than once, the first occurrence wins (the same rule as
// between files: the first file read wins).
using ConfigValues = std::map<std::string, ConfigValue, std::less<>>;

// Parses `text` (the contents of `path`) into `values`, keeping existing entries. Each malformed
// line adds one message "path:line: ..." to `problems`.
void parseConfigText(std::string_view text, const std::string& path, ConfigValues* values,
                     std::vector<std::string>* problems);

// Reads and parses the file at `path`. Returns ncclSystemError with *errnoOut set when the file
// cannot be opened or read (the caller decides whether a missing file deserves a warning).
[[nodiscard]] ncclResult_t readConfigFile(const std::string& path, ConfigValues* values,
                                          std::vector<std::string>* problems, int* errnoOut);

}  // namespace braid
