// An example external net plugin: plain TCP, one socket per connection, host memory only. It is
// written against include/nccl_net.h alone (no Braid code), exports the v8 table that many
// deployed plugins still ship, and is loaded like any plugin:
//
//   NCCL_NET_PLUGIN=/path/to/libnccl-net-example-tcp.so NCCL_NET=ExampleTCP ./my_job
//
// Its one device listens on EXAMPLE_TCP_ADDR (an IPv4 address) or else the host's first
// non-loopback IPv4 address (127.0.0.1 if there is none). A message is an 8-byte length, then the
// payload; requests of a connection complete in the order they were posted, and all progress is
// made inside test(), never blocking, as the plugin API requires.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <nccl_net.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace {

constexpr uint64_t kHandleMagic = 0x6578616d706c6574ull;  // "examplet"

ncclDebugLogger_t gLog = nullptr;
in_addr gAddr{};

#define EXAMPLE_WARN(...) \
  if (gLog != nullptr) gLog(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)

struct Handle {
  uint64_t magic;
  sockaddr_in addr;
};
static_assert(sizeof(Handle) <= NCCL_NET_HANDLE_MAXSIZE, "the handle fits");

struct Request;
struct Conn {
  explicit Conn(int socketFd) : fd(socketFd) {}
  int fd;
  bool failed = false;
  std::deque<Request*> queue;  // posted, not yet complete, in order
};

struct Request {
  Conn* conn;
  bool isSend;
  char* data;
  uint64_t size;  // a send's size; a receive's capacity, then the message's size
  uint64_t header = 0;
  size_t headerDone = 0;
  size_t payloadDone = 0;
  bool complete = false;
};

struct Listener {
  int fd = -1;
};

in_addr chooseAddress() {
  in_addr addr{};
  const char* forced = std::getenv("EXAMPLE_TCP_ADDR");
  if (forced != nullptr && inet_pton(AF_INET, forced, &addr) == 1) return addr;
  addr.s_addr = htonl(INADDR_LOOPBACK);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return addr;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    break;
  }
  freeifaddrs(list);
  return addr;
}

ncclResult_t init(ncclDebugLogger_t logFunction) {
  gLog = logFunction;
  gAddr = chooseAddress();
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}

ncclResult_t getProperties(int dev, ncclNetProperties_v8_t* props) {
  if (dev != 0) return ncclInvalidArgument;
  static char name[] = "example-tcp0";
  *props = ncclNetProperties_v8_t{};
  props->name = name;
  props->ptrSupport = NCCL_PTR_HOST;
  props->speed = 10000;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  return ncclSuccess;
}

bool setNonBlocking(int fd) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0; }

ncclResult_t listen(int dev, void* opaque, void** listenComm) {
  if (dev != 0) return ncclInvalidArgument;
  Handle handle{kHandleMagic, {}};
  handle.addr.sin_family = AF_INET;
  handle.addr.sin_addr = gAddr;
  handle.addr.sin_port = 0;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  socklen_t len = sizeof(handle.addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&handle.addr), sizeof(handle.addr)) != 0 ||
      ::listen(fd, 64) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&handle.addr), &len) != 0 ||
      !setNonBlocking(fd)) {
    EXAMPLE_WARN("example-tcp: listen failed: %s", std::strerror(errno));
    if (fd >= 0) close(fd);
    return ncclSystemError;
  }
  std::memset(opaque, 0, NCCL_NET_HANDLE_MAXSIZE);
  std::memcpy(opaque, &handle, sizeof(handle));
  *listenComm = new Listener{fd};
  return ncclSuccess;
}

void tuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

ncclResult_t connect(int, void* opaque, void** sendComm, ncclNetDeviceHandle_v8_t**) {
  Handle handle{};
  std::memcpy(&handle, opaque, sizeof(handle));
  if (handle.magic != kHandleMagic) return ncclInvalidArgument;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  // Blocking connect: the peer's kernel completes it from the listen backlog without the peer.
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&handle.addr), sizeof(handle.addr)) != 0 ||
      !setNonBlocking(fd)) {
    EXAMPLE_WARN("example-tcp: connect to %s:%d failed: %s", inet_ntoa(handle.addr.sin_addr),
                 ntohs(handle.addr.sin_port), std::strerror(errno));
    if (fd >= 0) close(fd);
    return ncclSystemError;
  }
  tuneSocket(fd);
  *sendComm = new Conn(fd);
  return ncclSuccess;
}

ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t**) {
  *recvComm = nullptr;
  const int fd = accept4(static_cast<Listener*>(listenComm)->fd, nullptr, nullptr, SOCK_NONBLOCK);
  if (fd < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ncclSuccess : ncclSystemError;
  tuneSocket(fd);
  *recvComm = new Conn(fd);
  return ncclSuccess;
}

ncclResult_t regMr(void*, void*, size_t, int type, void** mhandle) {
  *mhandle = nullptr;
  return type == NCCL_PTR_HOST ? ncclSuccess : ncclInternalError;
}
ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) { return ncclInternalError; }
ncclResult_t deregMr(void*, void*) { return ncclSuccess; }

ncclResult_t post(void* comm, bool isSend, void* data, uint64_t size, void** request) {
  auto* conn = static_cast<Conn*>(comm);
  if (conn->failed) return ncclRemoteError;
  auto* req = new Request{conn, isSend, static_cast<char*>(data), size, 0, 0, 0, false};
  req->header = size;
  conn->queue.push_back(req);
  *request = req;
  return ncclSuccess;
}

ncclResult_t isend(void* sendComm, void* data, int size, int, void*, void** request) {
  return post(sendComm, true, data, static_cast<uint64_t>(size), request);
}

ncclResult_t irecv(void* recvComm, int n, void** data, int* sizes, int*, void**, void** request) {
  if (n != 1) return ncclInternalError;
  return post(recvComm, false, data[0], static_cast<uint64_t>(sizes[0]), request);
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

// Moves [buf + *done, buf + total) as far as the socket takes it. False on a closed or broken socket.
bool move(int fd, bool isSend, char* buf, size_t total, size_t* done) {
  while (*done < total) {
    const ssize_t n =
        isSend ? ::send(fd, buf + *done, total - *done, MSG_NOSIGNAL) : ::recv(fd, buf + *done, total - *done, 0);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n == 0) errno = 0;  // the peer closed
    return false;
  }
  return true;
}

// Progresses the connection's requests in order.
ncclResult_t progress(Conn* conn) {
  while (!conn->queue.empty()) {
    Request* r = conn->queue.front();
    if (!move(conn->fd, r->isSend, reinterpret_cast<char*>(&r->header), sizeof(r->header), &r->headerDone)) {
      conn->failed = true;
    } else if (r->headerDone == sizeof(r->header)) {
      if (!r->isSend && r->header > r->size) {
        EXAMPLE_WARN("example-tcp: a message of %llu bytes for a receive of %llu",
                     static_cast<unsigned long long>(r->header), static_cast<unsigned long long>(r->size));
        conn->failed = true;
      } else if (!move(conn->fd, r->isSend, r->data, r->header, &r->payloadDone)) {
        conn->failed = true;
      }
    }
    if (conn->failed) {
      EXAMPLE_WARN("example-tcp: the connection (socket %d) failed: %s", conn->fd,
                   errno != 0 ? std::strerror(errno) : "the peer closed it");
      return ncclRemoteError;
    }
    if (r->headerDone < sizeof(r->header) || r->payloadDone < r->header) return ncclSuccess;
    r->size = r->header;
    r->complete = true;
    conn->queue.pop_front();
  }
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* size) {
  auto* r = static_cast<Request*>(request);
  *done = 0;
  if (!r->complete) {
    const ncclResult_t res = progress(r->conn);
    if (res != ncclSuccess) return res;
  }
  if (!r->complete) return ncclSuccess;
  *done = 1;
  if (size != nullptr) *size = static_cast<int>(r->size);
  delete r;
  return ncclSuccess;
}

ncclResult_t closeComm(void* comm) {
  auto* conn = static_cast<Conn*>(comm);
  for (Request* r : conn->queue) delete r;
  close(conn->fd);
  delete conn;
  return ncclSuccess;
}

ncclResult_t closeListen(void* listenComm) {
  auto* l = static_cast<Listener*>(listenComm);
  close(l->fd);
  delete l;
  return ncclSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const ncclNet_v8_t ncclNetPlugin_v8 = {
    "ExampleTCP", init,  devices, getProperties, listen,    connect,   accept,      regMr,   regMrDmaBuf, deregMr,
    isend,        irecv, iflush,  test,          closeComm, closeComm, closeListen, nullptr, nullptr,
};
