#include "net/network.h"

#include <strings.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "net/socket_net_plugin.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::net {
namespace {

// The networks Braid can use, in order of preference.
const ncclNet_v11_t* const kBuiltIn[] = {&socketNetPlugin()};

void noteUnloadedPlugin() {
  static std::atomic<bool> said{false};
  const std::string& plugin = paramString(ParamId::kNetPlugin);
  if (plugin.empty() || said.exchange(true)) return;
  INFO(kLogInit | kLogNet,
       "NCCL_NET_PLUGIN=%s: Braid does not load external net plugins yet; using its built-in network", plugin.c_str());
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
  noteUnloadedPlugin();
  const std::string& wanted = paramString(ParamId::kNet);
  for (const ncclNet_v11_t* table : kBuiltIn) {
    if (!wanted.empty() && strcasecmp(wanted.c_str(), table->name) != 0) continue;
    ncclNetCommConfig_v11_t config{};
    config.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
    void* context = nullptr;
    ncclResult_t res = table->init(&context, commHash, &config, netLog, nullptr);
    int devices = 0;
    if (res == ncclSuccess) res = table->devices(&devices);
    if (res == ncclSuccess && devices > 0) {
      INFO(kLogInit | kLogNet, "comm 0x%llx: network %s with %d device%s", static_cast<unsigned long long>(commHash),
           table->name, devices, devices == 1 ? "" : "s");
      out->reset(new Network(table, context, devices));
      return ncclSuccess;
    }
    if (context != nullptr) (void)table->finalize(context);
    if (!wanted.empty()) {
      WARN("NCCL_NET=%s: that network has no usable device (check NCCL_SOCKET_IFNAME)", wanted.c_str());
      return ncclSystemError;
    }
  }
  if (!wanted.empty()) {
    WARN("NCCL_NET=%s: no such network (Braid has Socket built in; external plugins are not loaded yet)",
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
