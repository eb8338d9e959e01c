// The parameter registry: static descriptions from params.def, values resolved on first use from
// the environment, then config files, then the default; cached until paramsReset.
//
// Locking: one mutex guards loading (entries, config files, the report queue). A loaded entry is
// published with a release store of its `ready` flag, so later reads take no lock. Nothing here
// logs while the mutex is held; see params_internal.h for why and how reports are deferred.
#include "util/params.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "util/config_file.h"
#include "util/log.h"
#include "util/params_internal.h"
#include "util/text.h"

namespace braid {

namespace {

// X-macro helpers: the `type` column of params.def (Int or String) selects how the default is
// rendered as text and as a number.
#define BRAID_PARAM_TYPE_Int ParamType::kInt
#define BRAID_PARAM_TYPE_String ParamType::kString
#define BRAID_PARAM_DEFAULT_TEXT_Int(def) #def
#define BRAID_PARAM_DEFAULT_TEXT_String(def) def
#define BRAID_PARAM_DEFAULT_INT_Int(def) static_cast<int64_t>(def)
#define BRAID_PARAM_DEFAULT_INT_String(def) static_cast<int64_t>(0)

constexpr ParamInfo kParamInfos[] = {
#define BRAID_PARAM(id, type, name, def, desc) \
  {ParamId::k##id, BRAID_PARAM_TYPE_##type, name, BRAID_PARAM_DEFAULT_TEXT_##type(def), desc},
#include "util/params.def"
#undef BRAID_PARAM
};

constexpr int64_t kParamIntDefaults[] = {
#define BRAID_PARAM(id, type, name, def, desc) BRAID_PARAM_DEFAULT_INT_##type(def),
#include "util/params.def"
#undef BRAID_PARAM
};

constexpr size_t kParamCount = static_cast<size_t>(ParamId::kCount);
static_assert(sizeof(kParamInfos) / sizeof(kParamInfos[0]) == kParamCount, "params.def and ParamId disagree");
static_assert(sizeof(kParamIntDefaults) / sizeof(kParamIntDefaults[0]) == kParamCount,
              "params.def and ParamId disagree");

constexpr const char kSourceEnvironment[] = "environment";
constexpr const char kSourceDefault[] = "default";
constexpr const char kDefaultSystemConfigPath[] = "/etc/nccl.conf";

// Something to log once no lock is held.
struct Report {
  LogLevel level;
  uint64_t subsys;
  std::string text;
};

struct Entry {
  std::atomic<bool> ready{false};
  bool set = false;
  int64_t intValue = 0;
  std::string text;    // the value as given, or the default text
  std::string source;  // kSourceEnvironment, a config file path, or kSourceDefault
};

// A raw value found for a variable, before type checking.
struct RawValue {
  std::string text;
  std::string source;  // "environment" or the file path
  std::string where;   // for messages: "environment" or "path:line"
};

bool isKnownName(const std::string& name) {
  for (const ParamInfo& info : kParamInfos) {
    if (name == info.name) return true;
  }
  return false;
}

class Registry {
 public:
  const Entry& get(ParamId id) {
    Entry& e = entries_[static_cast<size_t>(id)];
    if (e.ready.load(std::memory_order_acquire)) return e;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!e.ready.load(std::memory_order_relaxed)) load(e, kParamInfos[static_cast<size_t>(id)]);
    return e;
  }

  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& e : entries_) e.ready.store(false, std::memory_order_release);
    filesLoaded_ = false;
    fileValues_.clear();
    reports_.clear();
    hasReports_.store(false, std::memory_order_release);
  }

  std::vector<Report> takeReports() {
    std::vector<Report> out;
    if (!hasReports_.load(std::memory_order_acquire)) return out;
    std::lock_guard<std::mutex> lock(mutex_);
    out.swap(reports_);
    hasReports_.store(false, std::memory_order_release);
    return out;
  }

  void setSystemConfigPath(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    systemConfigPath_ = path;
  }

 private:
  // Called with mutex_ held.
  void queue(LogLevel level, uint64_t subsys, std::string text) {
    reports_.push_back(Report{level, subsys, std::move(text)});
    hasReports_.store(true, std::memory_order_release);
  }

  // Called with mutex_ held: resolves one variable and publishes it.
  void load(Entry& e, const ParamInfo& info) {
    e.set = false;
    e.intValue = kParamIntDefaults[static_cast<size_t>(info.id)];
    e.text = info.defaultText;
    e.source = kSourceDefault;
    RawValue raw;
    if (lookup(info.name, &raw)) {
      int64_t parsed = 0;
      if (info.type == ParamType::kInt && parseInt64(raw.text, &parsed) != ncclSuccess) {
        queue(LogLevel::kWarn, kLogEnv,
              std::string(info.name) + " has invalid value '" + raw.text + "' (from " + raw.where +
                  "): expected a decimal or 0x-prefixed hexadecimal 64-bit integer; using the default " +
                  info.defaultText);
      } else {
        e.set = true;
        e.intValue = parsed;
        e.text = raw.text;
        e.source = raw.source;
        // What users of NCCL_DEBUG_SUBSYS=ENV expect: each variable that took effect, once.
        // A secret's text is never logged.
        const std::string shown = info.id == ParamId::kCommSecret ? std::string("<hidden>") : raw.text;
        queue(LogLevel::kInfo, kLogEnv, std::string(info.name) + " set by " + raw.where + " to " + shown);
      }
    }
    e.ready.store(true, std::memory_order_release);
  }

  // Called with mutex_ held. Empty values count as unset, in the environment as in files.
  bool lookup(const char* name, RawValue* raw) {
    const char* env = std::getenv(name);
    if (env != nullptr && env[0] != '\0') {
      *raw = RawValue{env, kSourceEnvironment, kSourceEnvironment};
      return true;
    }
    loadFiles();
    auto it = fileValues_.find(name);
    if (it == fileValues_.end() || it->second.value.empty()) return false;
    *raw = RawValue{it->second.value, it->second.path, it->second.path + ":" + std::to_string(it->second.line)};
    return true;
  }

  // Called with mutex_ held. NCCL's order: NCCL_CONF_FILE, or else ~/.nccl.conf; then the system
  // file. The first file that defines a variable wins.
  void loadFiles() {
    if (filesLoaded_) return;
    filesLoaded_ = true;
    const char* confFile = std::getenv("NCCL_CONF_FILE");
    if (confFile != nullptr && confFile[0] != '\0') {
      // The user named this file explicitly, so any failure to read it deserves a warning.
      readOneFile(confFile, /*warnIfMissing=*/true);
    } else {
      const char* home = std::getenv("HOME");
      if (home != nullptr && home[0] != '\0') readOneFile(std::string(home) + "/.nccl.conf", false);
    }
    readOneFile(systemConfigPath_, false);
    for (const auto& [name, value] : fileValues_) {
      if (!isKnownName(name)) {
        queue(LogLevel::kInfo, kLogEnv,
              value.path + ":" + std::to_string(value.line) + ": " + name + " is not a variable Braid reads; ignored");
      }
    }
  }

  void readOneFile(const std::string& path, bool warnIfMissing) {
    std::vector<std::string> problems;
    int err = 0;
    if (readConfigFile(path, &fileValues_, &problems, &err) != ncclSuccess) {
      if (warnIfMissing || err != ENOENT) {
        queue(LogLevel::kWarn, kLogEnv,
              "Cannot read config file " + path + ": " + std::strerror(err) + " (errno " + std::to_string(err) +
                  "); its settings are ignored");
      }
    }
    for (std::string& problem : problems) queue(LogLevel::kWarn, kLogEnv, "Config file " + problem);
  }

  std::mutex mutex_;
  std::atomic<bool> hasReports_{false};
  bool filesLoaded_ = false;
  ConfigValues fileValues_;
  std::vector<Report> reports_;
  std::string systemConfigPath_ = kDefaultSystemConfigPath;
  Entry entries_[kParamCount];
};

// Never destroyed: other threads (or atexit handlers) may still read parameters while static
// destructors run.
Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}

}  // namespace

const ParamInfo& paramInfo(ParamId id) { return kParamInfos[static_cast<size_t>(id)]; }

void paramsFlushReports() {
  for (const Report& r : registry().takeReports()) {
    logMessage(r.level, r.subsys, __FILE__, __LINE__, "%s", r.text.c_str());
  }
}

const std::string& paramStringQuiet(ParamId id) { return registry().get(id).text; }

int64_t paramInt(ParamId id) {
  const Entry& e = registry().get(id);
  paramsFlushReports();
  return e.intValue;
}

const std::string& paramString(ParamId id) {
  const Entry& e = registry().get(id);
  paramsFlushReports();
  return e.text;
}

bool paramIsSet(ParamId id) {
  const Entry& e = registry().get(id);
  paramsFlushReports();
  return e.set;
}

std::string paramSource(ParamId id) {
  const Entry& e = registry().get(id);
  paramsFlushReports();
  return e.source;
}

void paramsReset() { registry().reset(); }

void paramsSetSystemConfigPath(const std::string& path) { registry().setSystemConfigPath(path); }

}  // namespace braid
