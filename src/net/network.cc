#include "net/network.h"

#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "net/net_shims.h"
#include "net/socket_net_plugin.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::net {
namespace {

// A network Braid may use: an external plugin's table (seen as v11) or a built-in one.
struct Candidate {
  const ncclNet_v11_t* table;
  std::string origin;  // "built in", or the plugin library and its API version
};

// dlopen of one NCCL_NET_PLUGIN entry, with NCCL's naming rules (docs/net-plugin-abi.md §1.2):
// the name as given, then libnccl-net-<name>.so for a bare name; STATIC_PLUGIN: the program itself.
void* openPlugin(const std::string& name, std::string* why) {
  if (strcasecmp(name.c_str(), "STATIC_PLUGIN") == 0) return dlopen(nullptr, RTLD_NOW | RTLD_LOCAL);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  *why = dlerror();
  const bool isLibName =
      name.size() > 6 && name.compare(0, 3, "lib") == 0 && name.compare(name.size() - 3, 3, ".so") == 0;
  if (name.find('/') != std::string::npos || isLibName) return nullptr;
  const std::string alt = "libnccl-net-" + name + ".so";
  handle = dlopen(alt.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) *why += std::string("; ") + dlerror();
  return handle;
}

// The newest net table the library exports, as v11 (older ones through net_shims.h); null if none.
const ncclNet_v11_t* findTable(void* handle, int* version) {
  if (void* t = dlsym(handle, "ncclNetPlugin_v11")) {
    *version = 11;
    return static_cast<const ncclNet_v11_t*>(t);
  }
  if (void* t = dlsym(handle, "ncclNetPlugin_v10")) {
    *version = 10;
    return shimV10(static_cast<const ncclNet_v10_t*>(t));
  }
  if (void* t = dlsym(handle, "ncclNetPlugin_v9")) {
    *version = 9;
    return shimV9(static_cast<const ncclNet_v9_t*>(t));
  }
  if (void* t = dlsym(handle, "ncclNetPlugin_v8")) {
    *version = 8;
    return shimV8(static_cast<const ncclNet_v8_t*>(t));
  }
  *version = dlsym(handle, "ncclNetPlugin_v7") != nullptr ? 7 : dlsym(handle, "ncclNetPlugin_v6") != nullptr ? 6 : 0;
  return nullptr;
}

// The external plugins of NCCL_NET_PLUGIN (unset: libnccl-net.so if it exists; "none": nothing),
// loaded once per process and kept loaded; one line each about what happened.
const std::vector<Candidate>& externalPlugins() {
  static std::mutex mutex;
  static std::vector<Candidate>* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded != nullptr) return *loaded;
  loaded = new std::vector<Candidate>();  // never freed: plugins stay loaded for the process
  const std::string& setting = paramString(ParamId::kNetPlugin);
  if (strcasecmp(setting.c_str(), "none") == 0) return *loaded;
  std::vector<std::string> names;
  if (setting.empty()) {
    names.emplace_back("libnccl-net.so");
  } else {
    size_t start = 0;
    while (start <= setting.size()) {
      const size_t comma = std::min(setting.find(',', start), setting.size());
      if (comma > start) names.push_back(setting.substr(start, comma - start));
      start = comma + 1;
    }
  }
  for (const std::string& name : names) {
    std::string why;
    void* handle = openPlugin(name, &why);
    if (handle == nullptr) {
      if (setting.empty()) {
        INFO(kLogInit | kLogNet, "net plugin: no libnccl-net.so (none is needed); using Braid's built-in network");
      } else {
        WARN("NCCL_NET_PLUGIN: cannot load %s (%s); Braid falls back to its built-in network", name.c_str(),
             why.c_str());
      }
      continue;
    }
    int version = 0;
    const ncclNet_v11_t* table = findTable(handle, &version);
    if (table == nullptr) {
      WARN("NCCL_NET_PLUGIN: %s exports no ncclNetPlugin_v8 to _v11 table%s; Braid falls back to its built-in network",
           name.c_str(), version != 0 ? (" (only v" + std::to_string(version) + ", too old)").c_str() : "");
      dlclose(handle);
      continue;
    }
    INFO(kLogInit | kLogNet, "net plugin: loaded %s, network %s, API v%d", name.c_str(), table->name, version);
    loaded->push_back(Candidate{table, name + " (v" + std::to_string(version) + ")"});
  }
  return *loaded;
}

// The logger a network gets from init: its lines go through Braid's log (NCCL's subsystem bits are
// Braid's, see util/log.h).
void netLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  LogLevel ours = level == NCCL_LOG_WARN    ? LogLevel::kWarn
                  : level == NCCL_LOG_TRACE ? LogLevel::kTrace
                                            : LogLevel::kInfo;
  if (level == NCCL_LOG_NONE || level == NCCL_LOG_VERSION || !logEnabled(ours, flags)) return;
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  logMessage(ours, flags, file, line, "%s", text);
}

}  // namespace

ncclResult_t Network::open(uint64_t commHash, std::unique_ptr<Network>* out) {
  std::vector<Candidate> candidates = externalPlugins();
  candidates.push_back(Candidate{&socketNetPlugin(), "built in"});
  const std::string& wanted = paramString(ParamId::kNet);
  for (const Candidate& c : candidates) {
    const ncclNet_v11_t* table = c.table;
    if (!wanted.empty() && strcasecmp(wanted.c_str(), table->name) != 0) continue;
    ncclNetCommConfig_v11_t config{};
    config.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
    void* context = nullptr;
    ncclResult_t res = table->init(&context, commHash, &config, netLog, nullptr);
    int devices = 0;
    if (res == ncclSuccess) res = table->devices(&devices);
    if (res == ncclSuccess && devices > 0) {
      INFO(kLogInit | kLogNet, "comm 0x%llx: network %s (%s) with %d device%s",
           static_cast<unsigned long long>(commHash), table->name, c.origin.c_str(), devices, devices == 1 ? "" : "s");
      out->reset(new Network(table, context, devices));
      return ncclSuccess;
    }
    if (context != nullptr) (void)table->finalize(context);
    INFO(kLogInit | kLogNet, "network %s (%s): %s; trying the next one", table->name, c.origin.c_str(),
         res != ncclSuccess ? "init failed" : "no device");
  }
  if (!wanted.empty()) {
    WARN("NCCL_NET=%s: no usable network of that name (Braid has Socket built in; plugins come from NCCL_NET_PLUGIN)",
         wanted.c_str());
    return ncclInvalidUsage;
  }
  WARN("no network reaches the other hosts: no usable interface for the socket network (check NCCL_SOCKET_IFNAME)");
  return ncclSystemError;
}

Network::~Network() {
  if (context_ != nullptr && table_->finalize(context_) != ncclSuccess) {
    INFO(kLogNet, "network %s: finalize failed (ignored at teardown)", table_->name);
  }
}

}  // namespace braid::net
