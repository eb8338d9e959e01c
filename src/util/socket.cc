// Socket and SocketAcceptor (see socket.h for the contract).
#include "util/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "util/check.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {

namespace {

constexpr uint64_t kSocketLogSubsys = kLogBootstrap | kLogNet;

void setNoDelay(int fd) {
  // Bootstrap and control messages are small and latency-bound; Nagle would add up to 40 ms each.
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Connectors whose acceptor failed its proof, across the process: WARNs at most once per 10 s.
RateLimit& connectorWarnLimit() {
  static RateLimit limit;
  return limit;
}
std::mutex& connectorWarnMutex() {
  static std::mutex m;
  return m;
}

// Sends all of a handshake message now or fails: it is the first data on a fresh connection, far
// below any socket buffer, so a peer that does not take it is not worth waiting for.
bool sendNow(int fd, const void* data, size_t bytes) {
  for (;;) {
    ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(bytes);
  }
}

// Errors after which another connection attempt can succeed.
bool connectErrorIsTransient(int err, bool retryRefused) {
  switch (err) {
    case ECONNREFUSED:
      return retryRefused;
    case ETIMEDOUT:
    case ECONNRESET:
    case ECONNABORTED:
    case EINTR:
    case EAGAIN:
      return true;
    default:
      return false;
  }
}

const char* connectHint(int err, bool retryRefused) {
  if (err == ECONNREFUSED && !retryRefused) {
    return ": nothing listens there (the process exited or aborted, or the address is stale)";
  }
  if (err == EHOSTUNREACH || err == ENETUNREACH) return ": check the address and NCCL_SOCKET_IFNAME";
  return "";
}

// What a failed send or receive on an established connection says about the peer.
const char* transferErrorHint(int err) {
  switch (err) {
    case EPIPE:
    case ECONNRESET:
      return ": the peer closed the connection (it exited or aborted)";
    case ETIMEDOUT:
      return ": the peer's host acknowledged nothing for too long (a dropped link, or the host is down)";
    case EHOSTUNREACH:
    case ENETUNREACH:
      return ": the peer's host is no longer reachable (a link or route went down)";
    default:
      return "";
  }
}

ncclResult_t transferErrorResult(int err) {
  const bool peerGone =
      err == EPIPE || err == ECONNRESET || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH;
  return peerGone ? ncclRemoteError : ncclSystemError;
}

}  // namespace

void encodeSocketHandshake(const SocketHandshake& h, uint8_t* out) {
  std::memcpy(out, &h.type, sizeof(h.type));
  std::memcpy(out + sizeof(h.type), h.connectorNonce.data(), kSocketNonceBytes);
  std::memcpy(out + sizeof(h.type) + kSocketNonceBytes, h.proof.data(), kSocketProofBytes);
}

ncclResult_t parseSocketHandshake(const uint8_t* data, size_t size, SocketHandshake* out) {
  static_assert(sizeof(out->type) + kSocketNonceBytes + kSocketProofBytes == kSocketHandshakeBytes,
                "the handshake is packed");
  if (data == nullptr || size < kSocketHandshakeBytes) return ncclInvalidUsage;
  std::memcpy(&out->type, data, sizeof(out->type));
  std::memcpy(out->connectorNonce.data(), data + sizeof(out->type), kSocketNonceBytes);
  std::memcpy(out->proof.data(), data + sizeof(out->type) + kSocketNonceBytes, kSocketProofBytes);
  return ncclSuccess;
}

bool socketHandshakeProves(const SocketHandshake& h, const SocketAuthKey& key, const SocketNonce& challenge) {
  const SocketProof expected = socketAuthProof(key, SocketAuthRole::kConnector, h.type, challenge, h.connectorNonce);
  return constantTimeEqual(expected.data(), h.proof.data(), kSocketProofBytes);
}

bool socketAcceptorProofValid(const SocketAuthKey& key, uint32_t type, const SocketNonce& challenge,
                              const SocketNonce& nonce, const SocketProof& proof) {
  const SocketProof expected = socketAuthProof(key, SocketAuthRole::kAcceptor, type, challenge, nonce);
  return constantTimeEqual(expected.data(), proof.data(), kSocketProofBytes);
}

Socket::Socket(UniqueFd fd, const SocketAddress& local, const SocketAddress& peer)
    : fd_(std::move(fd)), local_(local), peer_(peer) {}

std::string Socket::peerName() const {
  std::string addr = socketAddressToString(peer_);
  return description_.empty() ? addr : description_ + " (" + addr + ")";
}

ncclResult_t Socket::listen(const SocketAddress& local, uint64_t magic, SocketType type, Socket* out) {
  std::string where = socketAddressToString(local);
  if (!socketAddressIsValid(local)) {
    WARN("Cannot listen on %s: not an IPv4 or IPv6 address", where.c_str());
    return ncclInvalidArgument;
  }
  Socket sock(UniqueFd(::socket(local.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)), local,
              SocketAddress{});
  if (!sock.valid()) {
    int err = errno;
    WARN("Cannot create a socket to listen on %s: %s (errno %d)", where.c_str(), strerror(err), err);
    return ncclSystemError;
  }
  // SO_REUSEADDR lets a fixed port (NCCL_COMM_ID) be bound again while old connections linger.
  int one = 1;
  (void)setsockopt(sock.fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  socklen_t len = socketAddressLength(local);
  if (::bind(sock.fd_.get(), &local.sa, len) != 0 || ::listen(sock.fd_.get(), SOMAXCONN) != 0) {
    int err = errno;
    WARN("Cannot listen on %s: %s (errno %d)%s", where.c_str(), strerror(err), err,
         err == EADDRNOTAVAIL ? ": no local interface has this address" : "");
    return ncclSystemError;
  }
  len = sizeof(sock.local_);
  if (::getsockname(sock.fd_.get(), &sock.local_.sa, &len) != 0) {
    int err = errno;
    WARN("getsockname on the listener for %s failed: %s (errno %d)", where.c_str(), strerror(err), err);
    return ncclSystemError;
  }
  NCCLCHECK(socketAuthKey(magic, &sock.key_));
  sock.type_ = type;
  *out = std::move(sock);
  return ncclSuccess;
}

ncclResult_t Socket::waitReady(short events, const Deadline& deadline, const char* what) {
  for (;;) {
    if (deadline.aborted()) {
      INFO(kSocketLogSubsys, "Aborted while %s %s", what, peerName().c_str());
      return ncclInternalError;
    }
    if (deadline.expired()) {
      WARN("Timed out after %.3g s %s %s", deadline.timeoutSeconds(), what, peerName().c_str());
      return ncclRemoteError;
    }
    pollfd pfd{fd_.get(), events, 0};
    int n = ::poll(&pfd, 1, deadline.sliceMs());
    if (n < 0 && errno != EINTR) {
      int err = errno;
      WARN("poll() %s %s failed: %s (errno %d)", what, peerName().c_str(), strerror(err), err);
      return ncclSystemError;
    }
    // Errors and hang-ups count as ready: the next send/recv reports them with their errno.
    if (n > 0) return ncclSuccess;
  }
}

ncclResult_t Socket::connect(const SocketAddress& remote, uint64_t magic, SocketType type,
                             const std::string& peerDescription, bool retryRefused, const Deadline& deadline,
                             Socket* out, const SocketPump& pump) {
  Socket sock;
  NCCLCHECK(connectStart(remote, magic, type, peerDescription, retryRefused, deadline, &sock));
  for (;;) {
    bool done = false;
    NCCLCHECK(sock.handshakeProgress(&done));
    if (done) break;
    if (pump && !sock.handshakeWantsWrite()) {
      if (deadline.aborted()) {
        INFO(kSocketLogSubsys, "Aborted while in the handshake with %s", sock.peerName().c_str());
        return ncclInternalError;
      }
      if (deadline.expired()) {
        WARN("Timed out after %.3g s in the handshake with %s", deadline.timeoutSeconds(), sock.peerName().c_str());
        return ncclRemoteError;
      }
      NCCLCHECK(pump(sock.fd()));
    } else {
      NCCLCHECK(sock.waitReady(sock.handshakeWantsWrite() ? POLLOUT : POLLIN, deadline, "in the handshake with"));
    }
  }
  *out = std::move(sock);
  return ncclSuccess;
}

ncclResult_t Socket::handshakeProgress(bool* done) {
  *done = !auth_.active;
  constexpr size_t kIncoming = kSocketNonceBytes + kSocketProofBytes;
  while (auth_.active) {
    if (auth_.got == kSocketNonceBytes && !auth_.replied) {
      NCCLCHECK(sendSome(auth_.reply.data(), auth_.reply.size(), &auth_.sent));
      if (auth_.sent < auth_.reply.size()) return ncclSuccess;
      auth_.replied = true;
    }
    // The acceptor's nonce, then (after our reply) its proof.
    const size_t want = auth_.replied ? kIncoming : kSocketNonceBytes;
    uint8_t* into = auth_.got < kSocketNonceBytes ? auth_.acceptorNonce.data() + auth_.got
                                                  : auth_.acceptorProof.data() + (auth_.got - kSocketNonceBytes);
    size_t got = 0;
    bool closed = false;
    NCCLCHECK(recvOnce(into, want - auth_.got, &got, &closed));
    if (closed && auth_.replied) {
      WARN(
          "%s closed the connection after this process's handshake proof: it refused it (the unique id is stale "
          "or another job's, BRAID_COMM_SECRET differs, or it is not a Braid process of this job)",
          peerName().c_str());
      return ncclRemoteError;
    }
    if (closed) {
      WARN("%s closed the connection before its handshake challenge (it exited or aborted, or dropped the connection)",
           peerName().c_str());
      return ncclRemoteError;
    }
    if (got == 0) return ncclSuccess;
    auth_.got += got;
    if (auth_.got == kSocketNonceBytes && !auth_.replied) {
      SocketHandshake h{static_cast<uint32_t>(type_), auth_.connectorNonce, {}};
      h.proof = socketAuthProof(key_, SocketAuthRole::kConnector, h.type, auth_.acceptorNonce, auth_.connectorNonce);
      encodeSocketHandshake(h, auth_.reply.data());
    }
    if (auth_.got == kIncoming) {
      NCCLCHECK(checkAcceptorProof());
      *done = true;
    }
  }
  return ncclSuccess;
}

ncclResult_t Socket::checkAcceptorProof() {
  const bool ok = socketAcceptorProofValid(key_, static_cast<uint32_t>(type_), auth_.acceptorNonce,
                                           auth_.connectorNonce, auth_.acceptorProof);
  auth_ = ClientAuth{};
  key_ = SocketAuthKey{};
  if (ok) return ncclSuccess;
  std::lock_guard<std::mutex> lock(connectorWarnMutex());
  if (connectorWarnLimit().allow(0)) {
    WARN(
        "%s answered the handshake without proving it knows this job's secret (another job's process, a stranger "
        "on this port, or a different BRAID_COMM_SECRET); connection refused (%zu such refusals not reported "
        "before this one)",
        peerName().c_str(), connectorWarnLimit().suppressedBefore());
  }
  return ncclRemoteError;
}

ncclResult_t Socket::connectStart(const SocketAddress& remote, uint64_t magic, SocketType type,
                                  const std::string& peerDescription, bool retryRefused, const Deadline& deadline,
                                  Socket* out) {
  std::string where = peerDescription + " (" + socketAddressToString(remote) + ")";
  if (!socketAddressIsValid(remote)) {
    WARN("Cannot connect to %s: not an IPv4 or IPv6 address", where.c_str());
    return ncclInvalidArgument;
  }
  const int64_t retries = std::max<int64_t>(0, paramInt(ParamId::kSocketRetryCnt));
  const int64_t sleepMs = std::max<int64_t>(0, paramInt(ParamId::kSocketRetrySleepMsec));
  for (int64_t attempt = 0;; ++attempt) {
    Socket sock(UniqueFd(::socket(remote.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)), SocketAddress{},
                remote);
    if (!sock.valid()) {
      int err = errno;
      WARN("Cannot create a socket to connect to %s: %s (errno %d)", where.c_str(), strerror(err), err);
      return ncclSystemError;
    }
    sock.setDescription(peerDescription);
    setNoDelay(sock.fd_.get());
    int err = 0;
    if (::connect(sock.fd_.get(), &remote.sa, socketAddressLength(remote)) != 0) err = errno;
    if (err == EINPROGRESS) {
      NCCLCHECK(sock.waitReady(POLLOUT, deadline, "connecting to"));
      socklen_t len = sizeof(err);
      if (::getsockopt(sock.fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      socklen_t len = sizeof(sock.local_);
      (void)::getsockname(sock.fd_.get(), &sock.local_.sa, &len);
      // The acceptor speaks first (its challenge): nothing to send until it arrives.
      NCCLCHECK(socketAuthKey(magic, &sock.key_));
      NCCLCHECK(randomBytes(sock.auth_.connectorNonce.data(), kSocketNonceBytes));
      sock.type_ = type;
      sock.auth_.active = true;
      *out = std::move(sock);
      return ncclSuccess;
    }
    if (!connectErrorIsTransient(err, retryRefused) || attempt >= retries) {
      WARN("Connect to %s failed%s: %s (errno %d)%s", where.c_str(),
           attempt > 0 ? (" after " + std::to_string(attempt + 1) + " attempts").c_str() : "", strerror(err), err,
           connectHint(err, retryRefused));
      return err == EHOSTUNREACH || err == ENETUNREACH || err == EADDRNOTAVAIL ? ncclSystemError : ncclRemoteError;
    }
    TRACE(kSocketLogSubsys, "Connect to %s: %s, attempt %" PRId64 " of %" PRId64, where.c_str(), strerror(err),
          attempt + 1, retries + 1);
    if (!deadlineSleep(static_cast<int>(std::min<int64_t>((attempt + 1) * sleepMs, 60000)), deadline)) {
      if (deadline.aborted()) {
        INFO(kSocketLogSubsys, "Aborted while connecting to %s", where.c_str());
        return ncclInternalError;
      }
      WARN("Timed out after %.3g s connecting to %s: %s (errno %d) on each of %" PRId64 " attempts",
           deadline.timeoutSeconds(), where.c_str(), strerror(err), err, attempt + 1);
      return ncclRemoteError;
    }
  }
}

void Socket::setUnansweredTimeout(int64_t ms) {
  if (ms <= 0 || !fd_.valid()) return;
  const unsigned int userTimeout = static_cast<unsigned int>(std::min<int64_t>(ms, INT32_MAX));
  // Probe an idle connection after half the timeout, then every quarter: the kernel aborts at the
  // first probe check past the timeout, so a silent peer is noticed within about 1.25x of it.
  const int idleS = static_cast<int>(std::clamp<int64_t>(ms / 2000, 1, 32767));
  const int intervalS = static_cast<int>(std::clamp<int64_t>(ms / 4000, 1, 32767));
  const int one = 1;
  if (setsockopt(fd_.get(), IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout)) != 0 ||
      setsockopt(fd_.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
      setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPIDLE, &idleS, sizeof(idleS)) != 0 ||
      setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPINTVL, &intervalS, sizeof(intervalS)) != 0) {
    int err = errno;
    INFO(kSocketLogSubsys, "Could not set a %" PRId64 " ms timeout on the connection to %s: %s (errno %d)", ms,
         peerName().c_str(), strerror(err), err);
  }
}

ncclResult_t Socket::sendSome(const void* data, size_t bytes, size_t* done) {
  const char* p = static_cast<const char*>(data);
  while (*done < bytes) {
    iovec piece{const_cast<char*>(p + *done), bytes - *done};
    size_t sent = 0;
    NCCLCHECK(sendSomeV(&piece, 1, &sent));
    if (sent == 0) return ncclSuccess;  // would block
    *done += sent;
  }
  return ncclSuccess;
}

ncclResult_t Socket::recvSome(void* data, size_t bytes, size_t* done, bool* closed) {
  char* p = static_cast<char*>(data);
  *closed = false;
  while (*done < bytes) {
    size_t got = 0;
    NCCLCHECK(recvOnce(p + *done, bytes - *done, &got, closed));
    if (got == 0) return ncclSuccess;  // would block, or closed
    *done += got;
  }
  return ncclSuccess;
}

ncclResult_t Socket::sendSomeV(const iovec* iov, int count, size_t* sent) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  for (;;) {
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      *sent += static_cast<size_t>(n);
      return ncclSuccess;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ncclSuccess;
    int err = errno;
    WARN("Send to %s failed: %s (errno %d)%s", peerName().c_str(), strerror(err), err, transferErrorHint(err));
    return transferErrorResult(err);
  }
}

ncclResult_t Socket::recvOnce(void* data, size_t bytes, size_t* got, bool* closed) {
  *got = 0;
  *closed = false;
  for (;;) {
    ssize_t n = ::recv(fd_.get(), data, bytes, 0);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return ncclSuccess;
    }
    if (n == 0 || errno == ECONNRESET) {
      *closed = true;
      return ncclSuccess;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ncclSuccess;
    int err = errno;
    WARN("Receive from %s failed: %s (errno %d)%s", peerName().c_str(), strerror(err), err, transferErrorHint(err));
    return transferErrorResult(err);
  }
}

ncclResult_t Socket::sendAll(const void* data, size_t bytes, const Deadline& deadline) {
  size_t done = 0;
  for (;;) {
    NCCLCHECK(sendSome(data, bytes, &done));
    if (done == bytes) return ncclSuccess;
    NCCLCHECK(waitReady(POLLOUT, deadline, "sending to"));
  }
}

ncclResult_t Socket::recvAll(void* data, size_t bytes, const Deadline& deadline) {
  size_t done = 0;
  for (;;) {
    bool closed = false;
    NCCLCHECK(recvSome(data, bytes, &done, &closed));
    if (done == bytes) return ncclSuccess;
    if (closed) {
      WARN("%s closed the connection after %zu of %zu expected bytes (its process exited, aborted or failed)",
           peerName().c_str(), done, bytes);
      return ncclRemoteError;
    }
    NCCLCHECK(waitReady(POLLIN, deadline, "waiting for data from"));
  }
}

ncclResult_t Socket::sendMsg(const void* data, size_t bytes, const Deadline& deadline) {
  uint64_t length = bytes;
  NCCLCHECK(sendAll(&length, sizeof(length), deadline));
  return sendAll(data, bytes, deadline);
}

ncclResult_t Socket::recvMsg(void* data, size_t capacity, size_t* received, const Deadline& deadline) {
  uint64_t length = 0;
  NCCLCHECK(recvAll(&length, sizeof(length), deadline));
  if (length > capacity) {
    WARN("Message truncated: %s sent %" PRIu64 " bytes but the receive buffer holds %zu", peerName().c_str(), length,
         capacity);
    return ncclInvalidUsage;
  }
  NCCLCHECK(recvAll(data, length, deadline));
  *received = length;
  return ncclSuccess;
}

SocketAcceptor::SocketAcceptor(Socket listener, size_t helloBytes, std::chrono::milliseconds handshakeTimeout,
                               size_t maxPending)
    : listener_(std::move(listener)),
      helloBytes_(helloBytes),
      handshakeTimeout_(handshakeTimeout),
      maxPending_(std::max<size_t>(maxPending, 1)) {}

void SocketAcceptor::close() {
  pending_.clear();
  ready_.clear();
  listener_.close();
}

void SocketAcceptor::addPollFds(std::vector<pollfd>* fds) const {
  fds->push_back(pollfd{listener_.fd(), POLLIN, 0});
  for (const Pending& p : pending_) fds->push_back(pollfd{p.socket.fd(), POLLIN, 0});
}

bool SocketAcceptor::readPending(Pending* p) {
  std::string from = socketAddressToString(p->socket.peerAddress());
  size_t before = p->received;
  for (;;) {
    ssize_t n = ::recv(p->socket.fd(), p->buffer.data() + p->received, p->buffer.size() - p->received, 0);
    if (n > 0) {
      p->received += static_cast<size_t>(n);
      if (p->received == p->buffer.size()) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: closed during the handshake (%s)", from.c_str(),
         socketAddressToString(listener_.localAddress()).c_str(), n == 0 ? "end of stream" : strerror(errno));
    return false;
  }
  // Check the handshake as soon as it is complete, so a stranger is dropped before its hello.
  if (before < kSocketHandshakeBytes && p->received >= kSocketHandshakeBytes && !checkHandshake(p, from)) return false;
  if (p->received < p->buffer.size() && Deadline::Clock::now() >= p->expires) {
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: %zu of %zu handshake bytes after %lld ms", from.c_str(),
         socketAddressToString(listener_.localAddress()).c_str(), p->received, p->buffer.size(),
         static_cast<long long>(handshakeTimeout_.count()));
    return false;
  }
  return true;
}

bool SocketAcceptor::checkHandshake(Pending* p, const std::string& from) {
  SocketHandshake h{};
  // Called once p->received >= kSocketHandshakeBytes, so the parse cannot fail.
  if (parseSocketHandshake(reinterpret_cast<const uint8_t*>(p->buffer.data()), p->received, &h) != ncclSuccess) {
    return false;
  }
  const uint32_t type = h.type;
  const std::string where = socketAddressToString(listener_.localAddress());
  // Shut down, not only closed: a process forked meanwhile may hold a copy of the descriptor, and
  // the refused peer must see the end of the connection now.
  const auto refuse = [p] { (void)::shutdown(p->socket.fd(), SHUT_RDWR); };
  if (type != static_cast<uint32_t>(listener_.type())) {
    refuse();
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: handshake type %u, expected %u (a foreign peer)",
         from.c_str(), where.c_str(), type, static_cast<uint32_t>(listener_.type()));
    return false;
  }
  if (!socketHandshakeProves(h, listener_.key_, p->nonce)) {
    refuse();
    if (warnLimit_.allow(kWarnBadProof)) {
      WARN(
          "Listener %s: refused the connection from %s: its handshake does not prove it knows this job's secret "
          "(a stranger, a replayed handshake, another job's process, or a different BRAID_COMM_SECRET; %zu such "
          "refusals not reported before this one)",
          where.c_str(), from.c_str(), warnLimit_.suppressedBefore());
    }
    return false;
  }
  const SocketProof mine = socketAuthProof(listener_.key_, SocketAuthRole::kAcceptor, type, p->nonce, h.connectorNonce);
  if (!sendNow(p->socket.fd(), mine.data(), mine.size())) {
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: it did not take this side's proof", from.c_str(),
         where.c_str());
    return false;
  }
  return true;
}

bool SocketAcceptor::sendChallenge(Pending* p) {
  if (randomBytes(p->nonce.data(), p->nonce.size()) != ncclSuccess) return false;
  if (sendNow(p->socket.fd(), p->nonce.data(), p->nonce.size())) return true;
  INFO(kSocketLogSubsys, "Dropping connection from %s on %s: it did not take the handshake's challenge",
       socketAddressToString(p->socket.peerAddress()).c_str(), socketAddressToString(listener_.localAddress()).c_str());
  return false;
}

bool SocketAcceptor::dropOldestPending(WarnCause cause, const std::string& why) {
  if (pending_.empty()) return false;
  const std::string from = socketAddressToString(pending_.front().socket.peerAddress());
  if (warnLimit_.allow(cause)) {
    WARN(
        "Listener %s: dropping the connection from %s, still in its handshake, because %s (%zu such drops "
        "not reported before this one); a peer may be flooding this port",
        socketAddressToString(listener_.localAddress()).c_str(), from.c_str(), why.c_str(),
        warnLimit_.suppressedBefore());
  }
  pending_.erase(pending_.begin());
  return true;
}

SocketAcceptor::AcceptRecovery SocketAcceptor::acceptFailed(int err) {
  const std::string where = socketAddressToString(listener_.localAddress());
  if (err == EMFILE || err == ENFILE) {
    // Out of descriptors: the oldest half-open connection is the best one to give up.
    if (dropOldestPending(kWarnNoDescriptors, "no file descriptor is left (EMFILE/ENFILE) for a new connection")) {
      return AcceptRecovery::kRetry;
    }
    if (warnLimit_.allow(kWarnNoDescriptors)) {
      WARN("accept() on %s failed: %s (errno %d): raise the open file limit (ulimit -n); retrying every %d ms",
           where.c_str(), strerror(err), err, kAcceptBackoffMs);
    }
  } else if (err == ENOBUFS || err == ENOMEM) {
    if (warnLimit_.allow(kWarnNoMemory)) {
      WARN("accept() on %s failed: %s (errno %d): the system is short of memory; retrying every %d ms", where.c_str(),
           strerror(err), err, kAcceptBackoffMs);
    }
  } else {
    WARN("accept() on %s failed: %s (errno %d)", where.c_str(), strerror(err), err);
    return AcceptRecovery::kFailed;
  }
  // Nothing can be accepted until something is freed: wait rather than spin on the queued connection.
  std::this_thread::sleep_for(std::chrono::milliseconds(kAcceptBackoffMs));
  return AcceptRecovery::kBackedOff;
}

void SocketAcceptor::markReady(Pending* p) {
  AcceptedConnection done;
  done.hello.assign(p->buffer.begin() + kSocketHandshakeBytes, p->buffer.end());
  done.socket = std::move(p->socket);
  ready_.push_back(std::move(done));
}

void SocketAcceptor::admit(Pending p) {
  if (!sendChallenge(&p) || !readPending(&p)) return;
  if (p.received == p.buffer.size()) {
    markReady(&p);
    return;
  }
  if (pending_.size() >= maxPending_) {
    (void)dropOldestPending(kWarnPendingCap,
                            "more than " + std::to_string(maxPending_) + " connections are in their handshake");
  }
  pending_.push_back(std::move(p));
}

ncclResult_t SocketAcceptor::progress() {
  // Pending connections first: complete ones leave, so a full table below holds only slow ones.
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    if (!readPending(&p)) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (p.received == p.buffer.size()) {
      markReady(&p);
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
  for (int accepted = 0; accepted < kMaxAcceptsPerProgress;) {
    SocketAddress peer{};
    socklen_t len = sizeof(peer);
    int fd = ::accept4(listener_.fd(), &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      // The peer gave up between its SYN and our accept: nothing to do.
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
      const AcceptRecovery recovery = acceptFailed(err);
      if (recovery == AcceptRecovery::kFailed) return ncclSystemError;
      if (recovery == AcceptRecovery::kBackedOff) break;
      ++accepted;  // a descriptor was freed: try again, within this call's bound
      continue;
    }
    ++accepted;
    setNoDelay(fd);
    Pending p;
    p.socket = Socket(UniqueFd(fd), listener_.localAddress(), peer);
    p.buffer.resize(kSocketHandshakeBytes + helloBytes_);
    p.expires = Deadline::Clock::now() + handshakeTimeout_;
    admit(std::move(p));
  }
  return ncclSuccess;
}

bool SocketAcceptor::takeReady(AcceptedConnection* out) {
  if (ready_.empty()) return false;
  *out = std::move(ready_.front());
  ready_.pop_front();
  return true;
}

ncclResult_t SocketAcceptor::accept(const Deadline& deadline, AcceptedConnection* out) {
  std::vector<pollfd> fds;
  std::string where = socketAddressToString(listener_.localAddress());
  for (;;) {
    NCCLCHECK(progress());
    if (takeReady(out)) return ncclSuccess;
    if (deadline.aborted()) {
      INFO(kSocketLogSubsys, "Aborted while waiting for a connection on %s", where.c_str());
      return ncclInternalError;
    }
    if (deadline.expired()) {
      WARN("Timed out after %.3g s waiting for a connection on %s", deadline.timeoutSeconds(), where.c_str());
      return ncclRemoteError;
    }
    fds.clear();
    addPollFds(&fds);
    if (::poll(fds.data(), fds.size(), deadline.sliceMs()) < 0 && errno != EINTR) {
      int err = errno;
      WARN("poll() on %s failed: %s (errno %d)", where.c_str(), strerror(err), err);
      return ncclSystemError;
    }
  }
}

}  // namespace braid
