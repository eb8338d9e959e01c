// Parsing of the NCCL_DEBUG* settings. Pure functions (apart from gethostname/gettid): they never
// log, because the logger calls them while it initializes.
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "util/log_internal.h"
#include "util/text.h"

namespace braid {

namespace {

struct NamedLevel {
  const char* name;
  LogLevel level;
};

constexpr NamedLevel kLevels[] = {
    {"VERSION", LogLevel::kVersion}, {"WARN", LogLevel::kWarn},   {"INFO", LogLevel::kInfo},
    {"ABORT", LogLevel::kAbort},     {"TRACE", LogLevel::kTrace},
};

struct NamedSubsys {
  const char* name;
  uint64_t mask;
};

constexpr NamedSubsys kSubsystems[] = {
    {"INIT", kLogInit},
    {"COLL", kLogColl},
    {"P2P", kLogP2p},
    {"SHM", kLogShm},
    {"NET", kLogNet},
    {"GRAPH", kLogGraph},
    {"TUNING", kLogTuning},
    {"ENV", kLogEnv},
    {"ALLOC", kLogAlloc},
    {"CALL", kLogCall},
    {"PROXY", kLogProxy},
    {"NVLS", kLogNvls},
    {"BOOTSTRAP", kLogBootstrap},
    {"REG", kLogReg},
    {"PROFILE", kLogProfile},
    {"RAS", kLogRas},
    {"ALL", kLogAll},
};

constexpr char kSubsysNames[] =
    "INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, CALL, PROXY, NVLS, BOOTSTRAP, REG, PROFILE, RAS, ALL";

}  // namespace

ncclResult_t parseLogLevel(std::string_view text, LogLevel* level) {
  std::string_view t = trimWhitespace(text);
  if (t.empty()) {
    *level = LogLevel::kNone;
    return ncclSuccess;
  }
  for (const NamedLevel& l : kLevels) {
    if (equalsIgnoreCase(t, l.name)) {
      *level = l.level;
      return ncclSuccess;
    }
  }
  return ncclInvalidArgument;
}

ncclResult_t parseLogSubsys(std::string_view text, uint64_t* mask, std::string* unknown) {
  std::string_view t = trimWhitespace(text);
  bool invert = false;
  if (!t.empty() && t[0] == '^') {
    invert = true;
    t.remove_prefix(1);
  }
  uint64_t result = 0;
  unknown->clear();
  while (true) {
    size_t comma = t.find(',');
    std::string_view name = trimWhitespace(t.substr(0, comma));
    if (!name.empty()) {
      bool found = false;
      for (const NamedSubsys& s : kSubsystems) {
        if (equalsIgnoreCase(name, s.name)) {
          result |= s.mask;
          found = true;
          break;
        }
      }
      if (!found) {
        if (!unknown->empty()) *unknown += ",";
        unknown->append(name.data(), name.size());
      }
    }
    if (comma == std::string_view::npos) break;
    t.remove_prefix(comma + 1);
  }
  *mask = invert ? ~result : result;
  return unknown->empty() ? ncclSuccess : ncclInvalidArgument;
}

const char* logSubsysNames() { return kSubsysNames; }

std::string expandLogFilePath(std::string_view pattern, std::string_view host, long pid) {
  std::string out;
  out.reserve(pattern.size() + host.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c != '%' || i + 1 == pattern.size()) {
      out += c;
      continue;
    }
    char next = pattern[i + 1];
    if (next == 'h') {
      out.append(host.data(), host.size());
    } else if (next == 'p') {
      out += std::to_string(pid);
    } else if (next == '%') {
      out += '%';
    } else {
      out += c;
      out += next;
    }
    ++i;
  }
  return out;
}

std::string shortHostName() {
  char name[256] = {};
  // gethostname may leave the buffer unterminated when the name is too long; the last byte stays 0.
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
  std::string host(name);
  size_t dot = host.find('.');
  if (dot != std::string::npos) host.resize(dot);
  return host;
}

long currentThreadId() { return static_cast<long>(syscall(SYS_gettid)); }

}  // namespace braid
