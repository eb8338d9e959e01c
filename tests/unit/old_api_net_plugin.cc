// A net plugin of an older API version (6 or 7, chosen by OLD_NET_API at compile time) for the
// loader's tests (net_plugin_test.cc): it forwards every call to the example TCP plugin (a v8
// table, loaded from BRAID_EXAMPLE_NET_PLUGIN, or from BRAID_TEST_PLUGIN_DIR where the test programs
// run away from their build: scripts/stage-prebuilt.sh), narrowing or dropping what the older version lacks,
// so that Braid's v7 and v6 shims carry real messages. Two variables change what getProperties
// reports, to try the loader's refusals: OLD_API_NET_PTR_SUPPORT (the ptrSupport bits) and, for
// v7, OLD_API_NET_DEVICE_TYPE (the offload type).
#include <dlfcn.h>
#include <nccl_net.h>

#include <cstdlib>
#include <string>

#if OLD_NET_API != 6 && OLD_NET_API != 7
#error "OLD_NET_API must be 6 or 7"
#endif

namespace {

const ncclNet_v8_t* base() {
  static const ncclNet_v8_t* const table = [] {
    std::string path = BRAID_EXAMPLE_NET_PLUGIN;
    const char* dir = std::getenv("BRAID_TEST_PLUGIN_DIR");
    if (dir != nullptr && *dir != '\0') path = std::string(dir) + path.substr(path.find_last_of('/'));
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    return handle != nullptr ? static_cast<const ncclNet_v8_t*>(dlsym(handle, "ncclNetPlugin_v8")) : nullptr;
  }();
  return table;
}

#if OLD_NET_API == 7
using Props = ncclNetProperties_v7_t;
#else
using Props = ncclNetProperties_v6_t;
#endif

ncclResult_t init(ncclDebugLogger_t log) { return base() != nullptr ? base()->init(log) : ncclSystemError; }
ncclResult_t devices(int* ndev) { return base()->devices(ndev); }
ncclResult_t getProperties(int dev, Props* props) {
  ncclNetProperties_v8_t p{};
  const ncclResult_t res = base()->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  *props = Props{};
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->speed = p.speed;
  props->port = p.port;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  if (const char* bits = std::getenv("OLD_API_NET_PTR_SUPPORT")) props->ptrSupport = std::atoi(bits);
#if OLD_NET_API == 7
  props->netDeviceType = p.netDeviceType;
  props->netDeviceVersion = p.netDeviceVersion;
  if (const char* type = std::getenv("OLD_API_NET_DEVICE_TYPE")) {
    props->netDeviceType = static_cast<ncclNetDeviceType>(std::atoi(type));
  }
#endif
  return ncclSuccess;
}
ncclResult_t listen(int dev, void* handle, void** listenComm) { return base()->listen(dev, handle, listenComm); }
#if OLD_NET_API == 7
ncclResult_t connect(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v7_t** devComm) {
  return base()->connect(dev, handle, sendComm, devComm);
}
ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v7_t** devComm) {
  return base()->accept(listenComm, recvComm, devComm);
}
#else
ncclResult_t connect(int dev, void* handle, void** sendComm) {
  ncclNetDeviceHandle_v8_t* none = nullptr;
  return base()->connect(dev, handle, sendComm, &none);
}
ncclResult_t accept(void* listenComm, void** recvComm) {
  ncclNetDeviceHandle_v8_t* none = nullptr;
  return base()->accept(listenComm, recvComm, &none);
}
#endif
ncclResult_t regMr(void* comm, void* data, int size, int type, void** mhandle) {
  return base()->regMr(comm, data, static_cast<size_t>(size), type, mhandle);
}
ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  return base()->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
}
ncclResult_t deregMr(void* comm, void* mhandle) { return base()->deregMr(comm, mhandle); }
ncclResult_t isend(void* comm, void* data, int size, int tag, void* mhandle, void** request) {
  return base()->isend(comm, data, size, tag, mhandle, request);
}
ncclResult_t irecv(void* comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
  return base()->irecv(comm, n, data, sizes, tags, mhandles, request);
}
ncclResult_t iflush(void* comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return base()->iflush(comm, n, data, sizes, mhandles, request);
}
ncclResult_t test(void* request, int* done, int* sizes) { return base()->test(request, done, sizes); }
ncclResult_t closeSend(void* comm) { return base()->closeSend(comm); }
ncclResult_t closeRecv(void* comm) { return base()->closeRecv(comm); }
ncclResult_t closeListen(void* comm) { return base()->closeListen(comm); }
#if OLD_NET_API == 7
ncclResult_t getDeviceMr(void* comm, void* mhandle, void** dptr) { return base()->getDeviceMr(comm, mhandle, dptr); }
ncclResult_t irecvConsumed(void* comm, int n, void* request) { return base()->irecvConsumed(comm, n, request); }
#endif

}  // namespace

#if OLD_NET_API == 7
extern "C" __attribute__((visibility("default"))) const ncclNet_v7_t ncclNetPlugin_v7 = {
    "ExampleTCPv7", init,        devices,     getProperties, listen,       connect, accept,
    regMr,          regMrDmaBuf, deregMr,     isend,         irecv,        iflush,  test,
    closeSend,      closeRecv,   closeListen, getDeviceMr,   irecvConsumed};
#else
extern "C" __attribute__((visibility("default"))) const ncclNet_v6_t ncclNetPlugin_v6 = {
    "ExampleTCPv6", init,  devices, getProperties, listen, connect,   accept,    regMr,      regMrDmaBuf,
    deregMr,        isend, irecv,   iflush,        test,   closeSend, closeRecv, closeListen};
#endif
