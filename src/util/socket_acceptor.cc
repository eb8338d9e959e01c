// SocketAcceptor (see socket.h for the contract): the listener's pending connections, their
// handshakes and proofs, and the backoff when accepting fails.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "util/check.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/socket.h"
#include "util/socket_internal.h"
#include "util/tls.h"

namespace braid {

using socket_detail::kSocketLogSubsys;
using socket_detail::setNoDelay;

namespace {

// Sends all of a handshake message now or fails: it is the first data on a fresh connection, far
// below any socket buffer, so a peer that does not take it is not worth waiting for.
bool sendNow(int fd, const void* data, size_t bytes) {
  for (;;) {
    ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(bytes);
  }
}

}  // namespace

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
  for (const Pending& p : pending_) {
    fds->push_back(
        pollfd{p.socket.fd(), static_cast<short>(POLLIN | (p.socket.tls_.handshakeWantsWrite() ? POLLOUT : 0)), 0});
  }
}

bool SocketAcceptor::readRaw(Pending* p, size_t limit, const std::string& from) {
  while (p->received < limit) {
    ssize_t n = ::recv(p->socket.fd(), p->buffer.data() + p->received, limit - p->received, 0);
    if (n > 0) {
      p->received += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: closed during the handshake (%s)", from.c_str(),
         socketAddressToString(listener_.localAddress()).c_str(), n == 0 ? "end of stream" : strerror(errno));
    return false;
  }
  return true;
}

bool SocketAcceptor::readPending(Pending* p) {
  std::string from = socketAddressToString(p->socket.peerAddress());
  // The handshake first, and no further: it is checked as soon as it is complete, so a stranger is
  // dropped before its hello, and a connection that encrypts reads the rest through TLS.
  if (p->received < kSocketHandshakeBytes) {
    if (!readRaw(p, kSocketHandshakeBytes, from)) return false;
    if (p->received == kSocketHandshakeBytes && !checkHandshake(p, from)) return false;
  }
  if (p->received >= kSocketHandshakeBytes &&
      !(p->socket.tls_.inSession() ? readTlsHello(p, from) : readRaw(p, p->buffer.size(), from))) {
    return false;
  }
  if (!p->complete() && Deadline::Clock::now() >= p->expires) {
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: %zu of %zu handshake bytes%s after %lld ms",
         from.c_str(), socketAddressToString(listener_.localAddress()).c_str(), p->received, p->buffer.size(),
         p->socket.tls_.handshaking() ? " and its TLS handshake unfinished" : "",
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
  // The top bit of the type word says whether the connector encrypts (socket.h).
  const uint32_t type = h.type & ~kSocketTlsFlag;
  const bool peerEncrypts = (h.type & kSocketTlsFlag) != 0;
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
  // The proof of this end's own word: a connector with the other setting learns which it is.
  const uint32_t word = type | (listener_.encrypted() ? kSocketTlsFlag : 0);
  const SocketProof mine = socketAuthProof(listener_.key_, SocketAuthRole::kAcceptor, word, p->nonce, h.connectorNonce);
  if (!sendNow(p->socket.fd(), mine.data(), mine.size())) {
    INFO(kSocketLogSubsys, "Dropping connection from %s on %s: it did not take this side's proof", from.c_str(),
         where.c_str());
    return false;
  }
  if (peerEncrypts != listener_.encrypted()) {
    refuse();
    if (warnLimit_.allow(kWarnTls)) {
      listener_.tls_.warnMismatch("Listener " + where + ": refused the connection from " + from, peerEncrypts);
    }
    return false;
  }
  if (listener_.encrypted()) {
    p->socket.tls_.setContext(listener_.tls_.context());
    if (p->socket.tls_.start(p->socket.fd(), /*acceptor=*/true) != ncclSuccess) return false;
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
  if (p.complete()) {
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
    if (p.complete()) {
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
