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
#include "util/text.h"

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

// A net API version a plugin may export, newest first, with the shim that shows it as v11.
struct ApiVersion {
  int number;
  const char* symbol;
  const ncclNet_v11_t* (*asV11)(const void* table);
};
constexpr ApiVersion kApiVersions[] = {
    {11, "ncclNetPlugin_v11", [](const void* t) { return static_cast<const ncclNet_v11_t*>(t); }},
    {10, "ncclNetPlugin_v10", [](const void* t) { return shimV10(static_cast<const ncclNet_v10_t*>(t)); }},
    {9, "ncclNetPlugin_v9", [](const void* t) { return shimV9(static_cast<const ncclNet_v9_t*>(t)); }},
    {8, "ncclNetPlugin_v8", [](const void* t) { return shimV8(static_cast<const ncclNet_v8_t*>(t)); }},
    {7, "ncclNetPlugin_v7", [](const void* t) { return shimV7(static_cast<const ncclNet_v7_t*>(t)); }},
    {6, "ncclNetPlugin_v6", [](const void* t) { return shimV6(static_cast<const ncclNet_v6_t*>(t)); }},
};

// The newest net table the library exports, as v11; null with *why if it has none Braid can use.
// `shimmed` holds the older versions earlier plugins already use: a shim wraps one table per
// version, so a second plugin of such a version is refused rather than let replace the first.
const ncclNet_v11_t* findTable(void* handle, std::vector<int>* shimmed, int* version, std::string* why) {
  for (const ApiVersion& v : kApiVersions) {
    const void* table = dlsym(handle, v.symbol);
    if (table == nullptr) continue;
    *version = v.number;
    if (v.number < 11 && std::find(shimmed->begin(), shimmed->end(), v.number) != shimmed->end()) {
      *why = "its newest table is v" + std::to_string(v.number) +
             ", like a plugin loaded before it, and Braid adapts one plugin per older version";
      return nullptr;
    }
    if (v.number < 11) shimmed->push_back(v.number);
    return v.asV11(table);
  }
  *why = "it exports no ncclNetPlugin_v6 to _v11 table";
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
  std::vector<int> shimmed;
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
    const ncclNet_v11_t* table = findTable(handle, &shimmed, &version, &why);
    if (table == nullptr) {
      WARN("NCCL_NET_PLUGIN: %s is not used: %s", name.c_str(), why.c_str());
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

// Why `net` cannot carry Braid's traffic ("" when it can), with every device's properties in
// *props. Braid's proxies stage every byte in host memory, so a device must take host buffers
// (NCCL_PTR_HOST) and be a host-side network: one that offloads to the GPU (device-side unpack,
// GIN) would need device code Braid does not have.
std::string unusable(const ncclNet_v11_t& net, int devices, std::vector<ncclNetProperties_v11_t>* props) {
  props->assign(static_cast<size_t>(devices), ncclNetProperties_v11_t{});
  for (int d = 0; d < devices; ++d) {
    ncclNetProperties_v11_t& p = (*props)[d];
    const std::string dev = "device " + std::to_string(d);
    const ncclResult_t res = net.getProperties(d, &p);
    if (res != ncclSuccess) return "getProperties of " + dev + " failed: " + resultText(res);
    if ((p.ptrSupport & NCCL_PTR_HOST) == 0) {
      return dev + " takes no host memory (ptrSupport " + std::to_string(p.ptrSupport) +
             " lacks NCCL_PTR_HOST = 1), and Braid's proxies stage data in host memory";
    }
    if (p.netDeviceType != NCCL_NET_DEVICE_HOST) {
      return dev + " offloads to the GPU (device type " + std::to_string(static_cast<int>(p.netDeviceType)) +
             "); Braid drives host networks (NCCL_NET_DEVICE_HOST) only";
    }
  }
  return "";
}

// A network's finalize, for a context its init gave (shimmed older versions count their users).
void finalize(const ncclNet_v11_t& net, void* context) {
  if (context == nullptr || net.finalize == nullptr) return;
  if (net.finalize(context) != ncclSuccess) INFO(kLogNet, "network %s: finalize failed (ignored)", net.name);
}

}  // namespace

ncclResult_t Network::open(uint64_t commHash, std::unique_ptr<Network>* out) {
  std::vector<Candidate> candidates = externalPlugins();
  candidates.push_back(Candidate{&socketNetPlugin(), "built in"});
  const std::string& wanted = paramString(ParamId::kNet);
  // A network the user asked for by name or library that cannot be used is worth a WARN; the
  // default libnccl-net.so or the built-in one falling through is not.
  const bool asked = !wanted.empty() || !paramString(ParamId::kNetPlugin).empty();
  for (const Candidate& c : candidates) {
    const ncclNet_v11_t* table = c.table;
    if (!wanted.empty() && strcasecmp(wanted.c_str(), table->name) != 0) continue;
    ncclNetCommConfig_v11_t config{};
    config.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
    void* context = nullptr;
    ncclResult_t res = table->init(&context, commHash, &config, netLog, nullptr);
    int devices = 0;
    if (res == ncclSuccess) res = table->devices(&devices);
    std::vector<ncclNetProperties_v11_t> props;
    const std::string why = res != ncclSuccess ? std::string("init failed: ") + resultText(res)
                            : devices <= 0     ? std::string("it has no device")
                                               : unusable(*table, devices, &props);
    if (why.empty()) {
      INFO(kLogInit | kLogNet, "comm 0x%llx: network %s (%s) with %d device%s",
           static_cast<unsigned long long>(commHash), table->name, c.origin.c_str(), devices, devices == 1 ? "" : "s");
      for (int d = 0; d < devices; ++d) {
        INFO(kLogInit | kLogNet, "network %s device %d: %s%s%s, %d Mbit/s", table->name, d,
             props[d].name != nullptr ? props[d].name : "(unnamed)", props[d].pciPath != nullptr ? " at " : "",
             props[d].pciPath != nullptr ? props[d].pciPath : "", props[d].speed);
      }
      out->reset(new Network(table, context, std::move(props)));
      return ncclSuccess;
    }
    finalize(*table, context);
    if (asked) {
      WARN("network %s (%s) is not used: %s; trying the next one", table->name, c.origin.c_str(), why.c_str());
    } else {
      INFO(kLogInit | kLogNet, "network %s (%s) is not used: %s; trying the next one", table->name, c.origin.c_str(),
           why.c_str());
    }
  }
  if (!wanted.empty()) {
    WARN("NCCL_NET=%s: no usable network of that name (Braid has Socket built in; plugins come from NCCL_NET_PLUGIN)",
         wanted.c_str());
    return ncclInvalidUsage;
  }
  WARN("no network reaches the other hosts: no usable interface for the socket network (check NCCL_SOCKET_IFNAME)");
  return ncclSystemError;
}

Network::~Network() { finalize(*table_, context_); }

double Network::bandwidthGBps(int channels) const {
  const int used = std::min(channels, static_cast<int>(props_.size()));  // channels 0..used-1 cover them
  double mbps = 0;
  for (int dev = 0; dev < used; ++dev) mbps += std::max(props_[static_cast<size_t>(dev)].speed, 0);
  return mbps / 8000.0;  // Mbit/s to GB/s
}

}  // namespace braid::net
