#include "util/pid_space.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace braid {
namespace {

std::string firstLineOf(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "pid:[4026531836]", or "" when it cannot be read.
std::string pidNamespaceOf(const std::string& proc) {
  char ns[256] = {};
  const std::string path = "/proc/" + proc + "/ns/pid";
  const ssize_t n = ::readlink(path.c_str(), ns, sizeof(ns) - 1);
  return n < 0 ? std::string() : std::string(ns, static_cast<size_t>(n));
}

uint64_t pidSpaceOfProc(const std::string& proc) {
  const std::string ns = pidNamespaceOf(proc);
  const std::string boot = firstLineOf("/proc/sys/kernel/random/boot_id");
  if (ns.empty() || boot.empty()) return 0;
  const std::string both = boot + ns;
  return hashBytes(both.data(), both.size());
}

}  // namespace

uint64_t hashBytes(const void* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t localPidSpace() { return pidSpaceOfProc("self"); }

uint64_t pidSpaceOf(int pid) { return pid > 0 ? pidSpaceOfProc(std::to_string(pid)) : 0; }

int32_t innermostPidOf(int pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 6, "NSpid:") != 0) continue;
    std::istringstream fields(line.substr(6));
    int32_t last = 0;
    int32_t value = 0;
    while (fields >> value) last = value;
    return last;
  }
  return 0;
}

}  // namespace braid
