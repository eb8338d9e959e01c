// Socket (see socket.h for the contract); connecting is in socket_connector.cc, SocketAcceptor in
// socket_acceptor.cc, TLS in socket_tls.cc.
#include "util/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <utility>

#include "util/check.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/socket_internal.h"
#include "util/tls.h"

namespace braid {

namespace socket_detail {

void setNoDelay(int fd) {
  // Bootstrap and control messages are small and latency-bound; Nagle would add up to 40 ms each.
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace socket_detail

namespace {

using socket_detail::kSocketLogSubsys;

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

Socket::Socket() = default;
Socket::Socket(Socket&& other) noexcept = default;
Socket& Socket::operator=(Socket&& other) noexcept = default;
Socket::~Socket() = default;

Socket::Socket(UniqueFd fd, const SocketAddress& local, const SocketAddress& peer)
    : fd_(std::move(fd)), local_(local), peer_(peer) {}

void Socket::close() {
  tls_.endSession();
  fd_.reset();
}

std::string Socket::peerName() const {
  std::string addr = socketAddressToString(peer_);
  return description_.empty() ? addr : description_ + " (" + addr + ")";
}

ncclResult_t Socket::listen(const SocketAddress& local, uint64_t magic, SocketType type, Socket* out) {
  SocketAuthKey key;
  NCCLCHECK(socketAuthKey(magic, &key));
  return listen(local, key, type, out);
}

ncclResult_t Socket::listen(const SocketAddress& local, const SocketAuthKey& key, SocketType type, Socket* out) {
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
  sock.key_ = key;
  std::shared_ptr<const TlsContext> tls;
  NCCLCHECK(tlsCurrent(&tls));
  sock.tls_.setContext(std::move(tls));
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
  if (tls_.inSession()) return tls_.sendV(*this, iov, count, sent);
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
  if (tls_.inSession()) return tls_.recv(*this, data, bytes, got, closed);
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

}  // namespace braid
