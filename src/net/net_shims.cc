#include "net/net_shims.h"

#include <mutex>

#include "util/log.h"

namespace braid::net {
namespace {

constexpr size_t kV8MaxBytes = size_t{1} << 30;        // what an int size can carry, as NCCL caps it
constexpr size_t kV8MaxCollBytes = size_t{512} << 20;  // NCCL's default for v8 plugins

// Properties every version shares, copied member by member (the layouts differ).
template <typename P>
void copyCommon(const P& from, ncclNetProperties_v11_t* to) {
  *to = ncclNetProperties_v11_t{};
  to->name = from.name;
  to->pciPath = from.pciPath;
  to->guid = from.guid;
  to->ptrSupport = from.ptrSupport;
  to->regIsGlobal = from.regIsGlobal;
  to->speed = from.speed;
  to->port = from.port;
  to->latency = from.latency;
  to->maxComms = from.maxComms;
  to->maxRecvs = from.maxRecvs;
  to->netDeviceType = from.netDeviceType;
  to->netDeviceVersion = from.netDeviceVersion;
  to->maxMultiRequestSize = 1;
}

// v9 and v10 share one properties layout: all of v11's but maxMultiRequestSize.
ncclResult_t v9OrV10Props(ncclResult_t (*get)(int, ncclNetProperties_v10_t*), int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v10_t p{};
  const ncclResult_t res = get(dev, &p);
  if (res != ncclSuccess) return res;
  copyCommon(p, props);
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

// ---- v8 --------------------------------------------------------------------------------------
const ncclNet_v8_t* g8 = nullptr;
OnceInit g8Init;

ncclResult_t v8Init(void** ctx, uint64_t, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
                    ncclProfilerCallback_t) {
  return initOnce(&g8Init, ctx, config, [&] { return g8->init(log); });
}
ncclResult_t v8Props(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v8_t p{};
  const ncclResult_t res = g8->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  copyCommon(p, props);
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = kV8MaxBytes;
  props->maxCollBytes = kV8MaxCollBytes;
  return ncclSuccess;
}
ncclResult_t v8Listen(void*, int dev, void* handle, void** listenComm) { return g8->listen(dev, handle, listenComm); }
ncclResult_t v8Connect(void*, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t** devComm) {
  return g8->connect(dev, handle, sendComm, devComm);
}
ncclResult_t v8Isend(void* comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  if (size > kV8MaxBytes) {
    WARN("net plugin %s (v8): a send of %zu bytes is over the 1 GiB a v8 plugin can take", g8->name, size);
    return ncclInternalError;
  }
  return g8->isend(comm, data, static_cast<int>(size), tag, mhandle, request);
}
ncclResult_t v8Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                     void** request) {
  constexpr int kMaxRecvs = 8;
  if (n < 1 || n > kMaxRecvs) {
    WARN("net plugin %s (v8): a grouped receive of %d buffers (at most %d)", g8->name, n, kMaxRecvs);
    return ncclInternalError;
  }
  int intSizes[kMaxRecvs];
  for (int i = 0; i < n; ++i) {
    if (sizes[i] > kV8MaxBytes) {
      WARN("net plugin %s (v8): a receive of %zu bytes is over the 1 GiB a v8 plugin can take", g8->name, sizes[i]);
      return ncclInternalError;
    }
    intSizes[i] = static_cast<int>(sizes[i]);
  }
  if (*request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) *request = nullptr;
  return g8->irecv(comm, n, data, intSizes, tags, mhandles, request);
}
ncclResult_t v8Finalize(void* ctx) { return finalizeOnce(&g8Init, ctx); }

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

const ncclNet_v11_t* shimV8(const ncclNet_v8_t* plugin) {
  g8 = plugin;
  static ncclNet_v11_t table{};
  table = ncclNet_v11_t{plugin->name,
                        v8Init,
                        plugin->devices,
                        v8Props,
                        v8Listen,
                        v8Connect,
                        plugin->accept,
                        plugin->regMr,
                        plugin->regMrDmaBuf,
                        plugin->deregMr,
                        v8Isend,
                        v8Irecv,
                        plugin->iflush,
                        plugin->test,
                        plugin->closeSend,
                        plugin->closeRecv,
                        plugin->closeListen,
                        plugin->getDeviceMr,
                        plugin->irecvConsumed,
                        nullptr,
                        v8Finalize,
                        nullptr};
  return &table;
}

}  // namespace braid::net
