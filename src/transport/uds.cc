#include "transport/uds.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "util/check.h"
#include "util/log.h"

namespace braid::transport {
namespace {

constexpr size_t kMaxUdsName = sizeof(sockaddr_un::sun_path) - 8;
constexpr int kMaxFdsPerDatagram = 4;  // more than we ever send: extra ones are closed, not leaked

// The abstract address: a NUL, then the name (not NUL-terminated; the length says where it ends).
socklen_t abstractAddress(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// Result of one non-blocking receive attempt.
enum class Received { kNothing, kAccepted, kDropped };

// Collects every descriptor of every SCM_RIGHTS message into fds (so that none leaks).
void collectFds(msghdr* msg, std::vector<UniqueFd>* fds) {
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->emplace_back(fd);
    }
  }
}

}  // namespace

uint64_t nextUdsSerial() {
  static std::atomic<uint64_t> serial{0};
  return serial.fetch_add(1, std::memory_order_relaxed);
}

std::string udsSocketName(uint64_t commHash, int rank, int pid, uint64_t serial) {
  char name[96];
  std::snprintf(name, sizeof(name), "braid-uds-%016" PRIx64 "-%d-%d-%" PRIu64, commHash, rank, pid, serial);
  return name;
}

ncclResult_t UdsSocket::bind(const std::string& name, const std::string& what, UdsSocket* out) {
  if (name.empty() || name.size() > kMaxUdsName) {
    WARN("%s: Unix socket name '%s' is empty or longer than %zu bytes", what.c_str(), name.c_str(), kMaxUdsName);
    return ncclInternalError;
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    int err = errno;
    WARN("%s: creating a Unix datagram socket failed: %s (errno %d)", what.c_str(), std::strerror(err), err);
    return ncclSystemError;
  }
  sockaddr_un addr;
  socklen_t len = abstractAddress(name, &addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    WARN("%s: binding Unix socket @%s failed: %s (errno %d)%s", what.c_str(), name.c_str(), std::strerror(err), err,
         err == EADDRINUSE ? "; another process uses this name" : "");
    return ncclSystemError;
  }
  out->fd_ = std::move(fd);
  out->name_ = name;
  return ncclSuccess;
}

ncclResult_t UdsSocket::sendFd(const std::string& dest, int fd, const void* payload, size_t bytes,
                               const Deadline& deadline, const std::string& what,
                               const std::function<ncclResult_t()>& whileFull) const {
  sockaddr_un addr;
  socklen_t len = abstractAddress(dest, &addr);
  iovec iov{const_cast<void*>(payload), bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  while (true) {
    ssize_t sent = ::sendmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes)) return ncclSuccess;
    int err = sent < 0 ? errno : EMSGSIZE;
    if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && err != ENOBUFS) {
      bool gone = err == ECONNREFUSED || err == ENOENT;
      WARN("%s: sending a file descriptor to Unix socket @%s failed: %s (errno %d)%s", what.c_str(), dest.c_str(),
           std::strerror(err), err, gone ? "; the receiving process has exited or closed its socket" : "");
      return gone ? ncclRemoteError : ncclSystemError;
    }
    if (deadline.aborted()) {
      INFO(kLogInit | kLogP2p, "%s: aborted while sending a file descriptor to @%s", what.c_str(), dest.c_str());
      return ncclInternalError;
    }
    if (deadline.expired()) {
      WARN("%s: Unix socket @%s stayed full for %.1f s; the receiving process does not read it", what.c_str(),
           dest.c_str(), deadline.timeoutSeconds());
      return ncclRemoteError;
    }
    if (whileFull) NCCLCHECK(whileFull());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

namespace {

// One non-blocking recvmsg: accepts a datagram of exactly `bytes` bytes with exactly one descriptor.
ncclResult_t receiveOne(int sock, void* payload, size_t bytes, UniqueFd* fd, const std::string& what,
                        Received* result) {
  iovec iov{payload, bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerDatagram)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got < 0) {
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) {
      *result = Received::kNothing;
      return ncclSuccess;
    }
    WARN("%s: receiving from a Unix socket failed: %s (errno %d)", what.c_str(), std::strerror(err), err);
    return ncclSystemError;
  }
  std::vector<UniqueFd> fds;
  collectFds(&msg, &fds);
  bool whole = static_cast<size_t>(got) == bytes && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
  if (!whole || fds.size() != 1) {
    INFO(kLogInit | kLogP2p, "%s: dropped an unexpected Unix datagram (%zd bytes, %zu descriptors)", what.c_str(), got,
         fds.size());
    *result = Received::kDropped;
    return ncclSuccess;
  }
  *fd = std::move(fds[0]);
  *result = Received::kAccepted;
  return ncclSuccess;
}

}  // namespace

ncclResult_t UdsSocket::tryRecvFd(void* payload, size_t bytes, UniqueFd* fd, const std::string& what, bool* got) const {
  Received result = Received::kDropped;
  while (result == Received::kDropped) NCCLCHECK(receiveOne(fd_.get(), payload, bytes, fd, what, &result));
  *got = result == Received::kAccepted;
  return ncclSuccess;
}

ncclResult_t UdsSocket::recvFd(void* payload, size_t bytes, UniqueFd* fd, const Deadline& deadline,
                               const std::string& what) const {
  while (true) {
    Received result = Received::kNothing;
    NCCLCHECK(receiveOne(fd_.get(), payload, bytes, fd, what, &result));
    if (result == Received::kAccepted) return ncclSuccess;
    if (deadline.aborted()) {
      INFO(kLogInit | kLogP2p, "%s: aborted while waiting for a file descriptor on @%s", what.c_str(), name_.c_str());
      return ncclInternalError;
    }
    if (deadline.expired()) {
      WARN("%s: no file descriptor arrived on Unix socket @%s within %.1f s; the sending process is stuck or dead",
           what.c_str(), name_.c_str(), deadline.timeoutSeconds());
      return ncclRemoteError;
    }
    if (result == Received::kDropped) continue;  // there may be more queued: read before waiting
    pollfd pfd{fd_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, deadline.sliceMs()) < 0 && errno != EINTR) {
      int err = errno;
      WARN("%s: poll on Unix socket @%s failed: %s (errno %d)", what.c_str(), name_.c_str(), std::strerror(err), err);
      return ncclSystemError;
    }
  }
}

}  // namespace braid::transport
