// SocketConnector, and Socket::connect on top of it (see socket_connector.h and socket.h).
#include "util/socket_connector.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <mutex>
#include <utility>

#include "util/check.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket_internal.h"
#include "util/tls.h"

namespace braid {
namespace {

using socket_detail::kSocketLogSubsys;
using socket_detail::setNoDelay;

// Connectors whose acceptor failed its proof, across the process: WARNs at most once per 10 s.
RateLimit& connectorWarnLimit() {
  static RateLimit limit;
  return limit;
}
std::mutex& connectorWarnMutex() {
  static std::mutex m;
  return m;
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

// The handshake's type word: the type, with kSocketTlsFlag when this end encrypts.
uint32_t wireType(const Socket& socket) {
  return static_cast<uint32_t>(socket.type()) | (socket.encrypted() ? kSocketTlsFlag : 0);
}

}  // namespace

ncclResult_t Socket::connect(const SocketAddress& remote, uint64_t magic, SocketType type,
                             const std::string& peerDescription, bool retryRefused, const Deadline& deadline,
                             Socket* out, const SocketPump& pump) {
  SocketAuthKey key;
  NCCLCHECK(socketAuthKey(magic, &key));
  return connect(remote, key, type, peerDescription, retryRefused, deadline, out, pump);
}

ncclResult_t Socket::connect(const SocketAddress& remote, const SocketAuthKey& key, SocketType type,
                             const std::string& peerDescription, bool retryRefused, const Deadline& deadline,
                             Socket* out, const SocketPump& pump) {
  SocketConnector connector;
  NCCLCHECK(SocketConnector::start(remote, key, type, peerDescription, retryRefused, deadline, &connector));
  Socket& sock = connector.socket();
  for (;;) {
    bool done = false;
    NCCLCHECK(connector.progress(&done));
    if (done) break;
    if (pump && !connector.wantsWrite()) {
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
      NCCLCHECK(sock.waitReady(connector.wantsWrite() ? POLLOUT : POLLIN, deadline, "in the handshake with"));
    }
  }
  *out = std::move(sock);
  return ncclSuccess;
}

ncclResult_t SocketConnector::start(const SocketAddress& remote, uint64_t magic, SocketType type,
                                    const std::string& peerDescription, bool retryRefused, const Deadline& deadline,
                                    SocketConnector* out) {
  SocketAuthKey key;
  NCCLCHECK(socketAuthKey(magic, &key));
  return start(remote, key, type, peerDescription, retryRefused, deadline, out);
}

ncclResult_t SocketConnector::start(const SocketAddress& remote, const SocketAuthKey& key, SocketType type,
                                    const std::string& peerDescription, bool retryRefused, const Deadline& deadline,
                                    SocketConnector* out) {
  std::string where = peerDescription + " (" + socketAddressToString(remote) + ")";
  if (!socketAddressIsValid(remote)) {
    WARN("Cannot connect to %s: not an IPv4 or IPv6 address", where.c_str());
    return ncclInvalidArgument;
  }
  std::shared_ptr<const TlsContext> tls;
  NCCLCHECK(tlsCurrent(&tls));
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
    setNoDelay(sock.fd());
    int err = 0;
    if (::connect(sock.fd(), &remote.sa, socketAddressLength(remote)) != 0) err = errno;
    if (err == EINPROGRESS) {
      NCCLCHECK(sock.waitReady(POLLOUT, deadline, "connecting to"));
      socklen_t len = sizeof(err);
      if (::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      socklen_t len = sizeof(sock.local_);
      (void)::getsockname(sock.fd(), &sock.local_.sa, &len);
      sock.type_ = type;
      sock.tls_.setContext(std::move(tls));
      // The acceptor speaks first (its challenge): nothing to send until it arrives.
      SocketConnector c;
      c.socket_ = std::move(sock);
      c.key_ = key;
      NCCLCHECK(randomBytes(c.auth_.connectorNonce.data(), kSocketNonceBytes));
      c.auth_.active = true;
      *out = std::move(c);
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

bool SocketConnector::wantsWrite() const {
  return (auth_.active && auth_.got == kSocketNonceBytes && !auth_.replied) || socket_.tls_.handshakeWantsWrite();
}

ncclResult_t SocketConnector::progress(bool* done) {
  *done = false;
  // A failed proof check leaves no handshake running: without this, a later call would take the
  // refused connection for a complete one.
  if (failure_ == ncclSuccess) failure_ = advance(done);
  return failure_;
}

ncclResult_t SocketConnector::advance(bool* done) {
  NCCLCHECK(proofProgress());
  if (auth_.active) return ncclSuccess;
  if (socket_.tls_.inSession()) return socket_.tls_.handshake(socket_, done);
  *done = true;
  return ncclSuccess;
}

// Reads the acceptor's nonce, answers it, reads the acceptor's proof and checks it; starts TLS
// after a valid proof where this end encrypts. Returns with auth_.active still set while it waits.
ncclResult_t SocketConnector::proofProgress() {
  constexpr size_t kIncoming = kSocketNonceBytes + kSocketProofBytes;
  while (auth_.active) {
    if (auth_.got == kSocketNonceBytes && !auth_.replied) {
      NCCLCHECK(socket_.sendSome(auth_.reply.data(), auth_.reply.size(), &auth_.sent));
      if (auth_.sent < auth_.reply.size()) return ncclSuccess;
      auth_.replied = true;
    }
    // The acceptor's nonce, then (after our reply) its proof.
    const size_t want = auth_.replied ? kIncoming : kSocketNonceBytes;
    uint8_t* into = auth_.got < kSocketNonceBytes ? auth_.acceptorNonce.data() + auth_.got
                                                  : auth_.acceptorProof.data() + (auth_.got - kSocketNonceBytes);
    size_t got = 0;
    bool closed = false;
    NCCLCHECK(socket_.recvOnce(into, want - auth_.got, &got, &closed));
    if (closed && auth_.replied) {
      WARN(
          "%s closed the connection after this process's handshake proof: it refused it (the unique id is stale "
          "or another job's, BRAID_COMM_SECRET differs, or it is not a Braid process of this job)",
          socket_.peerName().c_str());
      return ncclRemoteError;
    }
    if (closed) {
      WARN("%s closed the connection before its handshake challenge (it exited or aborted, or dropped the connection)",
           socket_.peerName().c_str());
      return ncclRemoteError;
    }
    if (got == 0) return ncclSuccess;
    auth_.got += got;
    if (auth_.got == kSocketNonceBytes && !auth_.replied) {
      SocketHandshake h{wireType(socket_), auth_.connectorNonce, {}};
      h.proof = socketAuthProof(key_, SocketAuthRole::kConnector, h.type, auth_.acceptorNonce, auth_.connectorNonce);
      encodeSocketHandshake(h, auth_.reply.data());
    }
    if (auth_.got == kIncoming) {
      NCCLCHECK(checkAcceptorProof());
      if (socket_.encrypted()) NCCLCHECK(socket_.tls_.start(socket_.fd(), /*acceptor=*/false));
    }
  }
  return ncclSuccess;
}

ncclResult_t SocketConnector::checkAcceptorProof() {
  const uint32_t type = wireType(socket_);
  const bool ok = socketAcceptorProofValid(key_, type, auth_.acceptorNonce, auth_.connectorNonce, auth_.acceptorProof);
  // A proof for the other setting: the acceptor holds the key but encrypts where this end does not, or
  // the reverse.
  const bool otherSetting = !ok && socketAcceptorProofValid(key_, type ^ kSocketTlsFlag, auth_.acceptorNonce,
                                                            auth_.connectorNonce, auth_.acceptorProof);
  auth_ = Auth{};
  key_ = SocketAuthKey{};
  if (ok) return ncclSuccess;
  if (otherSetting) {
    socket_.tls_.warnMismatch(socket_.peerName(), !socket_.encrypted());
    return ncclRemoteError;
  }
  std::lock_guard<std::mutex> lock(connectorWarnMutex());
  if (connectorWarnLimit().allow(0)) {
    WARN(
        "%s answered the handshake without proving it knows this job's secret (another job's process, a stranger "
        "on this port, or a different BRAID_COMM_SECRET); connection refused (%zu such refusals not reported "
        "before this one)",
        socket_.peerName().c_str(), connectorWarnLimit().suppressedBefore());
  }
  return ncclRemoteError;
}

}  // namespace braid
