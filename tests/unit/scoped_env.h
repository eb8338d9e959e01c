// Saves a set of environment variables, unsets them, and restores their original values (or
// absence) when destroyed. Tests that change NCCL_* variables hold one, so that a test neither sees
// the caller's settings nor leaks its own into the next test.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace braid::testing {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  explicit ScopedEnv(const std::vector<std::string>& names) { clear(names); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { restore(); }

  // Saves and unsets `names` (each name is saved once, the first time).
  void clear(const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      const char* value = getenv(name.c_str());
      saved_.emplace_back(name, value != nullptr ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name.c_str());
    }
  }

  // Puts every saved variable back, in reverse order so a name saved twice ends at its first value.
  void restore() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
    saved_.clear();
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace braid::testing
