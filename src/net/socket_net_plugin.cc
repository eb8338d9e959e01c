#include "net/socket_net_plugin.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/socket_net.h"
#include "util/check.h"
#include "util/log.h"
#include "util/net_if.h"

namespace braid::net {
namespace {

// The interfaces, found by the first init and kept for the process (as NCCL does).
struct Devices {
  std::mutex mutex;
  bool found = false;
  std::vector<NetIf> ifs;
  std::vector<std::string> names;  // storage for ncclNetProperties.name
};

Devices& devices() {
  static Devices* d = new Devices();  // never destroyed: plugins may be called during exit
  return *d;
}

// What each comm object of the table is: a listener, or one end of a connection.
struct ListenComm {
  std::unique_ptr<SocketNetListener> listener;
};
struct Comm {
  std::unique_ptr<SocketNetConn> conn;
};
// A request handed out by isend/irecv: the engine's request and the comm that tests it.
struct Request {
  SocketNetConn* conn;
  SocketNetRequest* req;
};
// The per-communicator context of init (v11): only what connect needs.
struct Context {
  uint64_t commId;
  int trafficClass;
};

ncclResult_t checkDev(int dev, const char* caller) {
  std::lock_guard<std::mutex> lock(devices().mutex);
  if (!devices().found || dev < 0 || dev >= static_cast<int>(devices().ifs.size())) {
    WARN("net/socket: %s: device %d does not exist (%zu devices)", caller, dev, devices().ifs.size());
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t init(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t,
                  ncclProfilerCallback_t) {
  Devices& d = devices();
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    if (!d.found) {
      std::vector<NetIf> usable;
      NCCLCHECK(netIfFindUsable(nullptr, &usable));
      for (const NetIf& netIf : usable) {
        const bool seen = std::any_of(d.ifs.begin(), d.ifs.end(), [&](const NetIf& i) { return i.name == netIf.name; });
        if (seen) continue;
        d.ifs.push_back(netIf);
        d.names.push_back(netIf.name);
        INFO(kLogNet | kLogInit, "net/socket: device %zu is %s", d.ifs.size() - 1, netIfToString(netIf).c_str());
      }
      d.found = true;
    }
  }
  *ctx = new Context{commId, config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return ncclSuccess;
}

ncclResult_t devicesCount(int* ndev) {
  std::lock_guard<std::mutex> lock(devices().mutex);
  *ndev = static_cast<int>(devices().ifs.size());
  return ncclSuccess;
}

ncclResult_t getProperties(int dev, ncclNetProperties_v11_t* props) {
  NCCLCHECK(checkDev(dev, "getProperties"));
  std::lock_guard<std::mutex> lock(devices().mutex);
  *props = ncclNetProperties_v11_t{};
  props->name = const_cast<char*>(devices().names[dev].c_str());
  props->pciPath = nullptr;
  props->guid = static_cast<uint64_t>(dev);
  props->ptrSupport = NCCL_PTR_HOST;
  props->regIsGlobal = 0;
  props->forceFlush = 0;
  props->speed = netIfSpeedMbps(devices().ifs[dev]);
  props->port = 0;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t listen(void*, int dev, void* handle, void** listenComm) {
  NCCLCHECK(checkDev(dev, "listen"));
  SocketAddress local{};
  {
    std::lock_guard<std::mutex> lock(devices().mutex);
    local = devices().ifs[dev].addr;
  }
  auto l = std::make_unique<ListenComm>();
  SocketNetHandle h{};
  NCCLCHECK(SocketNetListener::listen(local, &h, &l->listener));
  std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  std::memcpy(handle, &h, sizeof(h));
  *listenComm = l.release();
  return ncclSuccess;
}

// Connections in their handshakes, by the handle the caller passes again on each connect call
// (the API's way of saying "the same connection"; the handle's bytes come from a peer, so they hold
// no pointer). An entry remembers the handle's contents: a caller that gave up on a connection
// (abort, timeout) may later pass new contents at the same address, which then start afresh.
struct Pending {
  std::array<unsigned char, sizeof(SocketNetHandle)> bytes;  // the handle's contents, as passed
  std::unique_ptr<SocketNetConnecting> connecting;
};
struct Connecting {
  std::mutex mutex;
  std::map<const void*, Pending> byHandle;
};
Connecting& connecting() {
  static Connecting* c = new Connecting;  // never destroyed: plugin calls may come during exit
  return *c;
}

ncclResult_t connect(void*, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v11_t**) {
  *sendComm = nullptr;
  NCCLCHECK(checkDev(dev, "connect"));
  Connecting& all = connecting();
  std::lock_guard<std::mutex> lock(all.mutex);
  SocketNetHandle h{};
  std::memcpy(&h, handle, sizeof(h));
  std::array<unsigned char, sizeof(SocketNetHandle)> bytes{};
  std::memcpy(bytes.data(), handle, bytes.size());
  auto it = all.byHandle.find(handle);
  if (it != all.byHandle.end() && it->second.bytes != bytes) {
    all.byHandle.erase(it);  // a connection given up on: these are a new handle's bytes
    it = all.byHandle.end();
  }
  if (it == all.byHandle.end()) {
    Pending pending{bytes, nullptr};
    NCCLCHECK(SocketNetConnecting::start(h, socketNetSocksPerConn(), &pending.connecting));
    it = all.byHandle.emplace(handle, std::move(pending)).first;
  }
  auto c = std::make_unique<Comm>();
  const ncclResult_t r = it->second.connecting->progress(&c->conn);
  if (r != ncclSuccess || c->conn != nullptr) all.byHandle.erase(it);
  NCCLCHECK(r);
  if (c->conn != nullptr) *sendComm = c.release();
  return ncclSuccess;
}

ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t**) {
  *recvComm = nullptr;
  auto c = std::make_unique<Comm>();
  NCCLCHECK(static_cast<ListenComm*>(listenComm)->listener->accept(&c->conn));
  if (c->conn != nullptr) *recvComm = c.release();
  return ncclSuccess;
}

// Host memory needs no registration; the handle only records the kind.
ncclResult_t regMr(void*, void*, size_t, int type, void** mhandle) {
  if (type != NCCL_PTR_HOST) {
    WARN("net/socket: regMr of memory type %d: the socket network moves host memory only", type);
    return ncclInternalError;
  }
  *mhandle = nullptr;
  return ncclSuccess;
}

ncclResult_t deregMr(void*, void*) { return ncclSuccess; }

ncclResult_t post(void* comm, bool isSend, void* data, size_t size, int tag, void** request) {
  *request = nullptr;
  SocketNetConn* conn = static_cast<Comm*>(comm)->conn.get();
  SocketNetRequest* req = nullptr;
  NCCLCHECK(conn->post(isSend, data, size, tag, &req));
  *request = new Request{conn, req};
  return ncclSuccess;
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void*, void*, void** request) {
  return post(sendComm, true, data, size, tag, request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void**, void**, void** request) {
  if (n != 1) {
    WARN("net/socket: irecv of %d buffers; this network receives one at a time (maxRecvs 1)", n);
    return ncclInternalError;
  }
  return post(recvComm, false, data[0], sizes[0], tags != nullptr ? tags[0] : 0, request);
}

// Nothing to flush: data lands in host memory.
ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  bool finished = false;
  size_t size = 0;
  const ncclResult_t result = r->conn->test(r->req, &finished, &size);
  *done = finished ? 1 : 0;
  if (finished && sizes != nullptr) *sizes = static_cast<int>(std::min<size_t>(size, INT32_MAX));
  // Done or failed, the request is over: the caller never tests it again.
  if (finished || result != ncclSuccess) delete r;
  return result;
}

ncclResult_t closeComm(void* comm) {
  delete static_cast<Comm*>(comm);
  return ncclSuccess;
}

ncclResult_t closeListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return ncclSuccess;
}

ncclResult_t finalize(void* ctx) {
  delete static_cast<Context*>(ctx);
  return ncclSuccess;
}

}  // namespace

const ncclNet_v11_t& socketNetPlugin() {
  static const ncclNet_v11_t table = {
      "Socket",    init,    devicesCount, getProperties, listen,   connect, accept,    regMr,
      nullptr,     deregMr, isend,        irecv,         iflush,   test,    closeComm, closeComm,
      closeListen, nullptr, nullptr,      nullptr,       finalize, nullptr,
  };
  return table;
}

}  // namespace braid::net
