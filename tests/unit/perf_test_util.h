// What the braid-perf unit tests share: parsing a command line given as a list of words.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "options.h"

namespace braidperf {

// parseOptions on "braid-perf" followed by `args`.
inline bool parse(std::initializer_list<const char*> args, Options* opt) {
  std::vector<std::string> store{"braid-perf"};
  for (const char* a : args) store.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& s : store) argv.push_back(&s[0]);
  return parseOptions(static_cast<int>(argv.size()), argv.data(), opt);
}

}  // namespace braidperf
