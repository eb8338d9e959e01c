#include "net/net_shims.h"

#include <mutex>

#include "util/log.h"

namespace braid::net {
namespace {

constexpr size_t kIntMaxBytes = size_t{1} << 30;       // what an int size can carry, as NCCL caps it
constexpr size_t kV8MaxCollBytes = size_t{512} << 20;  // NCCL's default for v8 and older plugins

// Properties every version has (version 6's), copied member by member: the layouts differ.
template <typename P>
void copyCommon(const P& from, ncclNetProperties_v11_t* to) {
  *to = ncclNetProperties_v11_t{};
  to->name = from.name;
  to->pciPath = from.pciPath;
  to->guid = from.guid;
  to->ptrSupport = from.ptrSupport;
  to->speed = from.speed;
  to->port = from.port;
  to->latency = from.latency;
  to->maxComms = from.maxComms;
  to->maxRecvs = from.maxRecvs;
  to->netDeviceType = NCCL_NET_DEVICE_HOST;  // version 6 knows no offload
  to->maxMultiRequestSize = 1;
}

// The offload type, which version 7 and later report.
template <typename P>
void copyOffload(const P& from, ncclNetProperties_v11_t* to) {
  to->netDeviceType = from.netDeviceType;
  to->netDeviceVersion = from.netDeviceVersion;
}

// v9 and v10 share one properties layout: all of v11's but maxMultiRequestSize.
ncclResult_t v9OrV10Props(ncclResult_t (*get)(int, ncclNetProperties_v10_t*), int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v10_t p{};
  const ncclResult_t res = get(dev, &p);
  if (res != ncclSuccess) return res;
  copyCommon(p, props);
  copyOffload(p, props);
  props->regIsGlobal = p.regIsGlobal;
  props->forceFlush = p.forceFlush;
  props->vProps = p.vProps;
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  return ncclSuccess;
}

// Per-process init of a v10-or-older plugin: the first communicator's init calls it, the context
// each communicator gets back holds only its config.
struct OnceInit {
  std::mutex mutex;
  int users = 0;
  ncclResult_t result = ncclSuccess;
};

template <typename InitFn>
ncclResult_t initOnce(OnceInit* once, void** ctx, ncclNetCommConfig_v11_t* config, const InitFn& init) {
  std::lock_guard<std::mutex> lock(once->mutex);
  if (once->users == 0) once->result = init();
  if (once->result != ncclSuccess) return once->result;
  once->users++;
  *ctx = new ncclNetCommConfig_v11_t{config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return ncclSuccess;
}

ncclResult_t finalizeOnce(OnceInit* once, void* ctx) {
  std::lock_guard<std::mutex> lock(once->mutex);
  delete static_cast<ncclNetCommConfig_v11_t*>(ctx);
  if (once->users > 0) once->users--;
  return ncclSuccess;  // older versions have no finalize
}

// ---- v10 -------------------------------------------------------------------------------------
const ncclNet_v10_t* g10 = nullptr;
OnceInit g10Init;

ncclResult_t v10Init(void** ctx, uint64_t, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
                     ncclProfilerCallback_t prof) {
  return initOnce(&g10Init, ctx, config, [&] { return g10->init(log, prof); });
}
ncclResult_t v10Props(int dev, ncclNetProperties_v11_t* props) { return v9OrV10Props(g10->getProperties, dev, props); }
ncclResult_t v10Listen(void*, int dev, void* handle, void** listenComm) { return g10->listen(dev, handle, listenComm); }
ncclResult_t v10Connect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t** devComm) {
  return g10->connect(dev, static_cast<ncclNetCommConfig_v10_t*>(ctx), handle, sendComm, devComm);
}
ncclResult_t v10Finalize(void* ctx) { return finalizeOnce(&g10Init, ctx); }

// ---- v9 --------------------------------------------------------------------------------------
const ncclNet_v9_t* g9 = nullptr;
OnceInit g9Init;

ncclResult_t v9Init(void** ctx, uint64_t, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
                    ncclProfilerCallback_t) {
  return initOnce(&g9Init, ctx, config, [&] { return g9->init(log); });
}
ncclResult_t v9Props(int dev, ncclNetProperties_v11_t* props) { return v9OrV10Props(g9->getProperties, dev, props); }
ncclResult_t v9Listen(void*, int dev, void* handle, void** listenComm) { return g9->listen(dev, handle, listenComm); }
ncclResult_t v9Connect(void*, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t** devComm) {
  return g9->connect(dev, handle, sendComm, devComm);
}
ncclResult_t v9Isend(void* comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  return g9->isend(comm, data, size, tag, mhandle, request);
}
ncclResult_t v9Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                     void** request) {
  return g9->irecv(comm, n, data, sizes, tags, mhandles, request);
}
ncclResult_t v9Finalize(void* ctx) { return finalizeOnce(&g9Init, ctx); }

// ---- v8, v7, v6: int sizes ---------------------------------------------------------------------
// One shim for the three, instantiated per table type; what a version lacks is told by kVersion.
template <typename Net>
struct IntSizeApi;
template <>
struct IntSizeApi<ncclNet_v8_t> {
  static constexpr int kVersion = 8;
  using Props = ncclNetProperties_v8_t;
};
template <>
struct IntSizeApi<ncclNet_v7_t> {
  static constexpr int kVersion = 7;
  using Props = ncclNetProperties_v7_t;
};
template <>
struct IntSizeApi<ncclNet_v6_t> {
  static constexpr int kVersion = 6;
  using Props = ncclNetProperties_v6_t;
};

template <typename Net>
const Net* gIntPlugin = nullptr;
template <typename Net>
OnceInit gIntInit;

// A size an int-size plugin can take; a WARN naming the call otherwise.
template <typename Net>
bool fitsInt(size_t bytes, const char* call) {
  if (bytes <= kIntMaxBytes) return true;
  WARN("net plugin %s (v%d): %s of %zu bytes is over the 1 GiB an int size can carry", gIntPlugin<Net>->name,
       IntSizeApi<Net>::kVersion, call, bytes);
  return false;
}

template <typename Net>
ncclResult_t intInit(void** ctx, uint64_t, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
                     ncclProfilerCallback_t) {
  return initOnce(&gIntInit<Net>, ctx, config, [&] { return gIntPlugin<Net>->init(log); });
}
template <typename Net>
ncclResult_t intProps(int dev, ncclNetProperties_v11_t* props) {
  typename IntSizeApi<Net>::Props p{};
  const ncclResult_t res = gIntPlugin<Net>->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  copyCommon(p, props);
  if constexpr (IntSizeApi<Net>::kVersion >= 7) copyOffload(p, props);
  if constexpr (IntSizeApi<Net>::kVersion >= 8) props->regIsGlobal = p.regIsGlobal;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = kIntMaxBytes;
  props->maxCollBytes = kV8MaxCollBytes;
  return ncclSuccess;
}
template <typename Net>
ncclResult_t intListen(void*, int dev, void* handle, void** listenComm) {
  return gIntPlugin<Net>->listen(dev, handle, listenComm);
}
template <typename Net>
ncclResult_t intConnect(void*, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t** devComm) {
  if constexpr (IntSizeApi<Net>::kVersion >= 7) {
    return gIntPlugin<Net>->connect(dev, handle, sendComm, devComm);
  } else {
    return gIntPlugin<Net>->connect(dev, handle, sendComm);  // no offload: *devComm stays as given
  }
}
template <typename Net>
ncclResult_t intAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t** devComm) {
  if constexpr (IntSizeApi<Net>::kVersion >= 7) {
    return gIntPlugin<Net>->accept(listenComm, recvComm, devComm);
  } else {
    return gIntPlugin<Net>->accept(listenComm, recvComm);
  }
}
template <typename Net>
ncclResult_t intRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if constexpr (IntSizeApi<Net>::kVersion >= 8) {
    return gIntPlugin<Net>->regMr(comm, data, size, type, mhandle);
  } else {
    if (!fitsInt<Net>(size, "a registration")) return ncclInternalError;
    return gIntPlugin<Net>->regMr(comm, data, static_cast<int>(size), type, mhandle);
  }
}
template <typename Net>
ncclResult_t intIsend(void* comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  if (!fitsInt<Net>(size, "a send")) return ncclInternalError;
  return gIntPlugin<Net>->isend(comm, data, static_cast<int>(size), tag, mhandle, request);
}
template <typename Net>
ncclResult_t intIrecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                      void** request) {
  constexpr int kMaxRecvs = 8;
  if (n < 1 || n > kMaxRecvs) {
    WARN("net plugin %s (v%d): a grouped receive of %d buffers (at most %d)", gIntPlugin<Net>->name,
         IntSizeApi<Net>::kVersion, n, kMaxRecvs);
    return ncclInternalError;
  }
  int intSizes[kMaxRecvs];
  for (int i = 0; i < n; ++i) {
    if (!fitsInt<Net>(sizes[i], "a receive")) return ncclInternalError;
    intSizes[i] = static_cast<int>(sizes[i]);
  }
  if (*request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) *request = nullptr;
  return gIntPlugin<Net>->irecv(comm, n, data, intSizes, tags, mhandles, request);
}
template <typename Net>
ncclResult_t intFinalize(void* ctx) {
  return finalizeOnce(&gIntInit<Net>, ctx);
}

template <typename Net>
const ncclNet_v11_t* shimIntSize(const Net* plugin) {
  gIntPlugin<Net> = plugin;
  static ncclNet_v11_t table{};
  decltype(table.getDeviceMr) getDeviceMr = nullptr;
  decltype(table.irecvConsumed) irecvConsumed = nullptr;
  if constexpr (IntSizeApi<Net>::kVersion >= 7) {
    getDeviceMr = plugin->getDeviceMr;
    irecvConsumed = plugin->irecvConsumed;
  }
  table = ncclNet_v11_t{plugin->name,        intInit<Net>,    plugin->devices,   intProps<Net>,
                        intListen<Net>,      intConnect<Net>, intAccept<Net>,    intRegMr<Net>,
                        plugin->regMrDmaBuf, plugin->deregMr, intIsend<Net>,     intIrecv<Net>,
                        plugin->iflush,      plugin->test,    plugin->closeSend, plugin->closeRecv,
                        plugin->closeListen, getDeviceMr,     irecvConsumed,     nullptr,
                        intFinalize<Net>,    nullptr};
  return &table;
}

}  // namespace

const ncclNet_v11_t* shimV10(const ncclNet_v10_t* plugin) {
  g10 = plugin;
  static ncclNet_v11_t table{};
  table = ncclNet_v11_t{plugin->name,
                        v10Init,
                        plugin->devices,
                        v10Props,
                        v10Listen,
                        v10Connect,
                        plugin->accept,
                        plugin->regMr,
                        plugin->regMrDmaBuf,
                        plugin->deregMr,
                        plugin->isend,
                        plugin->irecv,
                        plugin->iflush,
                        plugin->test,
                        plugin->closeSend,
                        plugin->closeRecv,
                        plugin->closeListen,
                        plugin->getDeviceMr,
                        plugin->irecvConsumed,
                        plugin->makeVDevice,
                        v10Finalize,
                        nullptr};
  return &table;
}

const ncclNet_v11_t* shimV9(const ncclNet_v9_t* plugin) {
  g9 = plugin;
  static ncclNet_v11_t table{};
  table = ncclNet_v11_t{plugin->name,
                        v9Init,
                        plugin->devices,
                        v9Props,
                        v9Listen,
                        v9Connect,
                        plugin->accept,
                        plugin->regMr,
                        plugin->regMrDmaBuf,
                        plugin->deregMr,
                        v9Isend,
                        v9Irecv,
                        plugin->iflush,
                        plugin->test,
                        plugin->closeSend,
                        plugin->closeRecv,
                        plugin->closeListen,
                        plugin->getDeviceMr,
                        plugin->irecvConsumed,
                        plugin->makeVDevice,
                        v9Finalize,
                        nullptr};
  return &table;
}

const ncclNet_v11_t* shimV8(const ncclNet_v8_t* plugin) { return shimIntSize(plugin); }
const ncclNet_v11_t* shimV7(const ncclNet_v7_t* plugin) { return shimIntSize(plugin); }
const ncclNet_v11_t* shimV6(const ncclNet_v6_t* plugin) { return shimIntSize(plugin); }

}  // namespace braid::net
