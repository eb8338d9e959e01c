#include "transport/uds.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/transport.h"
#include "util/check.h"
#include "util/log.h"
#include "util/pid_space.h"
#include "util/rate_limit.h"

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

// Collects every descriptor of every SCM_RIGHTS message into fds (so that none leaks), and the
// sender's SCM_CREDENTIALS.
void readControl(msghdr* msg, std::vector<UniqueFd>* fds, UdsCredentials* cred) {
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred uc{};
      std::memcpy(&uc, CMSG_DATA(c), sizeof(uc));
      cred->present = true;
      cred->pid = static_cast<int32_t>(uc.pid);
      cred->uid = static_cast<uint32_t>(uc.uid);
      cred->gid = static_cast<uint32_t>(uc.gid);
      continue;
    }
    if (c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->emplace_back(fd);
    }
  }
}

// One WARN per cause per interval for the whole process: a stranger that floods a socket (or
// every socket) gets its first datagram named, the rest counted.
enum StrangerCause : size_t { kNoCredentials, kOtherUser, kNotOfTheJob, kOtherRank };
bool allowStrangerWarn(StrangerCause cause, size_t* suppressed) {
  static std::mutex mutex;
  static RateLimit limit;
  std::lock_guard<std::mutex> lock(mutex);
  if (!limit.allow(cause)) return false;
  *suppressed = limit.suppressedBefore();
  return true;
}

bool sameUser(uint32_t uid) {
  return uid == static_cast<uint32_t>(::getuid()) || uid == static_cast<uint32_t>(::geteuid());
}

ncclResult_t checkRankOffset(size_t bytes, size_t rankOffset, const std::string& what) {
  if (rankOffset + sizeof(int32_t) <= bytes) return ncclSuccess;
  WARN("%s: a datagram of %zu bytes has no room for its sender's rank at offset %zu", what.c_str(), bytes, rankOffset);
  return ncclInternalError;
}

std::string rankText(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
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

std::vector<UdsSender> udsSendersOf(const std::vector<RankPlace>& peers, int self) {
  std::vector<UdsSender> senders;
  if (self < 0 || self >= static_cast<int>(peers.size())) return senders;
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    const RankPlace& p = peers[r];
    if (r != self && p.hostHash == peers[self].hostHash) senders.push_back(UdsSender{r, p.pid, p.pidSpace});
  }
  return senders;
}

std::vector<int> udsSenderRanks(const std::vector<UdsSender>& senders, uint64_t ownSpace, const UdsCredentials& cred) {
  std::vector<int> ranks;
  if (!cred.present || cred.pid < 0) return ranks;
  // A sender outside our pid space, visible in it, is named through /proc, once per datagram.
  bool resolved = false;
  uint64_t senderSpace = 0;
  int32_t senderPid = 0;
  for (const UdsSender& s : senders) {
    bool match = false;
    if (s.pidSpace == ownSpace || s.pidSpace == 0 || ownSpace == 0) {
      match = cred.pid != 0 && cred.pid == s.pid;  // one pid space (or /proc did not tell): pids as they are
    } else if (cred.pid == 0) {
      match = true;  // hidden from our namespace: the uid is all there is to check
    } else {
      if (!resolved) {
        senderSpace = pidSpaceOf(cred.pid);
        senderPid = innermostPidOf(cred.pid);
        resolved = true;
      }
      match = senderSpace == s.pidSpace && senderPid == s.pid;
    }
    if (match) ranks.push_back(s.rank);
  }
  return ranks;
}

ncclResult_t UdsSocket::bind(const std::string& name, const std::string& what, std::vector<UdsSender> senders,
                             UdsSocket* out) {
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
  // Before the name exists, so that every datagram that can reach it carries its sender's credentials.
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
    int err = errno;
    WARN(
        "%s: SO_PASSCRED on a Unix datagram socket failed: %s (errno %d); without it the senders of file "
        "descriptors cannot be checked",
        what.c_str(), std::strerror(err), err);
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
  out->senders_ = std::move(senders);
  out->pidSpace_ = localPidSpace();
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

bool UdsSocket::admits(const UdsCredentials& cred, const int32_t* claimedRank, size_t nFds,
                       const std::string& what) const {
  StrangerCause cause = kNoCredentials;
  std::vector<int> ranks;
  if (!cred.present) {
    cause = kNoCredentials;
  } else if (!sameUser(cred.uid)) {
    cause = kOtherUser;
  } else {
    ranks = udsSenderRanks(senders_, pidSpace_, cred);
    if (ranks.empty()) {
      cause = kNotOfTheJob;
    } else if (claimedRank == nullptr || std::find(ranks.begin(), ranks.end(), *claimedRank) != ranks.end()) {
      return true;
    } else {
      cause = kOtherRank;
    }
  }
  size_t suppressed = 0;
  if (!allowStrangerWarn(cause, &suppressed)) return false;
  char who[160];
  if (cause == kNoCredentials) {
    std::snprintf(who, sizeof(who), "a sender the kernel did not name");
  } else if (cause == kOtherRank) {
    std::snprintf(who, sizeof(who), "pid %d uid %u, the process of rank(s) %s, which claimed to be rank %d", cred.pid,
                  cred.uid, rankText(ranks).c_str(), *claimedRank);
  } else {
    std::snprintf(who, sizeof(who), "pid %d uid %u, %s", cred.pid, cred.uid,
                  cause == kOtherUser ? "another user" : "not a process of this job on this host");
  }
  WARN(
      "%s: dropped a datagram on Unix socket @%s from %s; its %zu file descriptor(s) were closed (%zu such "
      "datagrams not reported before this one)",
      what.c_str(), name_.c_str(), who, nFds, suppressed);
  return false;
}

// One non-blocking recvmsg: accepts a datagram of exactly `bytes` bytes with exactly one descriptor,
// from a process of the job that sends as the rank at rankOffset.
ncclResult_t UdsSocket::receiveOne(void* payload, size_t bytes, size_t rankOffset, UniqueFd* fd,
                                   const std::string& what, Received* result) const {
  iovec iov{payload, bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int) * kMaxFdsPerDatagram)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got < 0) {
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) {
      *result = Received::kNothing;
      return ncclSuccess;
    }
    WARN("%s: receiving from a Unix socket failed: %s (errno %d)", what.c_str(), std::strerror(err), err);
    return ncclSystemError;
  }
  std::vector<UniqueFd> fds;  // every descriptor that came, closed on return unless accepted
  UdsCredentials cred;
  readControl(&msg, &fds, &cred);
  *result = Received::kDropped;
  if (!admits(cred, nullptr, fds.size(), what)) return ncclSuccess;
  bool whole = static_cast<size_t>(got) == bytes && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
  if (!whole || fds.size() != 1) {
    INFO(kLogInit | kLogP2p, "%s: dropped an unexpected Unix datagram from pid %d (%zd bytes, %zu descriptors)",
         what.c_str(), cred.pid, got, fds.size());
    return ncclSuccess;
  }
  int32_t claimed = -1;
  std::memcpy(&claimed, static_cast<const char*>(payload) + rankOffset, sizeof(claimed));
  if (!admits(cred, &claimed, fds.size(), what)) return ncclSuccess;
  *fd = std::move(fds[0]);
  *result = Received::kAccepted;
  return ncclSuccess;
}

ncclResult_t UdsSocket::tryRecvFd(void* payload, size_t bytes, size_t rankOffset, UniqueFd* fd, const std::string& what,
                                  bool* got) const {
  NCCLCHECK(checkRankOffset(bytes, rankOffset, what));
  Received result = Received::kDropped;
  while (result == Received::kDropped) NCCLCHECK(receiveOne(payload, bytes, rankOffset, fd, what, &result));
  *got = result == Received::kAccepted;
  return ncclSuccess;
}

ncclResult_t UdsSocket::recvFd(void* payload, size_t bytes, size_t rankOffset, UniqueFd* fd, const Deadline& deadline,
                               const std::string& what) const {
  NCCLCHECK(checkRankOffset(bytes, rankOffset, what));
  while (true) {
    Received result = Received::kNothing;
    NCCLCHECK(receiveOne(payload, bytes, rankOffset, fd, what, &result));
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

bool FdInbox::offer(const FdKey& key, UniqueFd fd) {
  auto it = slots_.find(key);
  if (it == slots_.end() || it->second.valid()) return false;  // fd closes here
  it->second = std::move(fd);
  return true;
}

bool FdInbox::take(const FdKey& key, UniqueFd* fd) {
  auto it = slots_.find(key);
  if (it == slots_.end() || !it->second.valid()) return false;
  *fd = std::move(it->second);
  slots_.erase(it);
  return true;
}

size_t FdInbox::held() const {
  size_t n = 0;
  for (const auto& slot : slots_) n += slot.second.valid() ? 1 : 0;
  return n;
}

}  // namespace braid::transport
