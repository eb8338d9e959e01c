// SocketTls (socket_tls.h), and the TLS part of SocketAcceptor.
#include "util/socket_tls.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/socket.h"
#include "util/tls.h"

namespace braid {
namespace {

// Pieces of one send that add up to at most this go out as one TLS record: a header and a small
// payload cost one record and one system call, as one sendmsg() does without TLS. 16 KiB is a
// record's largest payload.
constexpr size_t kGatherBytes = 16 << 10;

const char* const kSameSettingHint =
    "every process of a job must make the same ncclSetEncryption call, or set the same BRAID_ENCRYPTION_PSK_FILE";

}  // namespace

SocketTls::SocketTls() = default;
SocketTls::SocketTls(SocketTls&& other) noexcept = default;
SocketTls& SocketTls::operator=(SocketTls&& other) noexcept = default;
SocketTls::~SocketTls() = default;

void SocketTls::endSession() { session_.reset(); }

bool SocketTls::hasBufferedInput() const { return session_ != nullptr && session_->hasBufferedInput(); }

bool SocketTls::handshaking() const { return session_ != nullptr && !session_->established(); }

bool SocketTls::handshakeWantsWrite() const { return handshaking() && session_->wantsWrite(); }

void SocketTls::warnMismatch(const std::string& who, bool peerEncrypts) const {
  if (peerEncrypts) {
    WARN("%s: it encrypts with TLS and this process does not; %s", who.c_str(), kSameSettingHint);
  } else {
    WARN("%s: it does not encrypt and this process encrypts with TLS (set by %s); %s", who.c_str(),
         tlsSource(*context_), kSameSettingHint);
  }
}

ncclResult_t SocketTls::start(int fd, bool acceptor) { return TlsSession::create(context_, fd, acceptor, &session_); }

ncclResult_t SocketTls::handshake(const Socket& owner, bool* done) {
  *done = false;
  switch (session_->handshake()) {
    case TlsStatus::kDone:
      *done = true;
      return ncclSuccess;
    case TlsStatus::kWouldBlock:
      return ncclSuccess;
    case TlsStatus::kClosed:
      WARN("%s closed the connection in the TLS handshake: it refused this process's pre-shared key (%s), or exited",
           owner.peerName().c_str(), kSameSettingHint);
      return ncclRemoteError;
    case TlsStatus::kFailed:
      break;
  }
  WARN("The TLS handshake with %s failed: %s (a different pre-shared key? %s)", owner.peerName().c_str(),
       session_->error().c_str(), kSameSettingHint);
  return ncclRemoteError;
}

namespace {

// Copies up to `room` bytes of `iov` from (piece, offset) on into `out`; returns how many.
size_t gather(const iovec* iov, int count, int piece, size_t offset, char* out, size_t room) {
  size_t n = 0;
  for (; piece < count && n < room; ++piece, offset = 0) {
    const size_t take = std::min(iov[piece].iov_len - offset, room - n);
    std::memcpy(out + n, static_cast<const char*>(iov[piece].iov_base) + offset, take);
    n += take;
  }
  return n;
}

}  // namespace

// Each write starts at the first byte not yet sent and covers at least min(what is left,
// kGatherBytes): after kWouldBlock the caller comes back with the same bytes from there, so a
// retry always repeats (at least) the record TLS committed, as OpenSSL requires.
ncclResult_t SocketTls::sendV(const Socket& owner, const iovec* iov, int count, size_t* sent) {
  std::array<char, kGatherBytes> gathered;
  int piece = 0;
  size_t offset = 0;
  while (piece < count) {
    const size_t left = iov[piece].iov_len - offset;
    if (left == 0) {
      ++piece;
      offset = 0;
      continue;
    }
    const char* data = static_cast<const char*>(iov[piece].iov_base) + offset;
    size_t bytes = left;
    if (left < kGatherBytes && piece + 1 < count) {
      bytes = gather(iov, count, piece, offset, gathered.data(), gathered.size());
      data = gathered.data();
    }
    size_t moved = 0;
    const TlsStatus status = session_->write(data, bytes, &moved);
    *sent += moved;
    for (offset += moved; piece < count && offset >= iov[piece].iov_len && moved > 0; ++piece) {
      offset -= iov[piece].iov_len;
    }
    if (status == TlsStatus::kDone) continue;
    if (status == TlsStatus::kWouldBlock) return ncclSuccess;
    return sendFailed(owner, status);
  }
  return ncclSuccess;
}

ncclResult_t SocketTls::sendFailed(const Socket& owner, TlsStatus status) const {
  const int err = status == TlsStatus::kClosed ? EPIPE : session_->lastErrno();
  if (err == 0) {
    WARN("TLS send to %s failed: %s", owner.peerName().c_str(), session_->error().c_str());
    return ncclRemoteError;
  }
  const bool peerGone =
      err == EPIPE || err == ECONNRESET || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH;
  WARN("Send to %s failed: %s (errno %d)%s", owner.peerName().c_str(), strerror(err), err,
       peerGone ? ": the peer closed the connection, or its host stopped answering" : "");
  return peerGone ? ncclRemoteError : ncclSystemError;
}

ncclResult_t SocketTls::recv(const Socket& owner, void* data, size_t bytes, size_t* got, bool* closed) {
  *got = 0;
  *closed = false;
  const TlsStatus status = session_->read(data, bytes, got);
  // Bytes first: the end of the stream, if that is what followed them, is reported by the next call.
  if (*got > 0 || status == TlsStatus::kDone || status == TlsStatus::kWouldBlock) return ncclSuccess;
  const int err = session_->lastErrno();
  if (status == TlsStatus::kClosed || err == ECONNRESET) {
    *closed = true;
    return ncclSuccess;
  }
  if (err != 0) {
    WARN("Receive from %s failed: %s (errno %d)%s", owner.peerName().c_str(), strerror(err), err,
         err == ETIMEDOUT ? ": the peer's host acknowledged nothing for too long (a dropped link, or the host is down)"
                          : "");
    return err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ? ncclRemoteError : ncclSystemError;
  }
  // Data that fails TLS's authentication was changed on the way, or sent by another process.
  WARN("TLS receive from %s failed: %s: the data was altered in transit or the connection is not the peer's",
       owner.peerName().c_str(), session_->error().c_str());
  return ncclRemoteError;
}

bool SocketAcceptor::readTlsHello(Pending* p, const std::string& from) {
  TlsSession& tls = p->socket.tls_.session();
  if (!tls.established()) {
    const TlsStatus status = tls.handshake();
    if (status == TlsStatus::kWouldBlock) return true;
    if (status != TlsStatus::kDone) {
      if (warnLimit_.allow(kWarnTls)) {
        WARN(
            "Listener %s: the TLS handshake with %s failed: %s (a different pre-shared key? every process of a job "
            "must use the same one; %zu such failures not reported before this one)",
            socketAddressToString(listener_.localAddress()).c_str(), from.c_str(),
            status == TlsStatus::kClosed ? "the peer closed the connection" : tls.error().c_str(),
            warnLimit_.suppressedBefore());
      }
      return false;
    }
  }
  bool closed = false;
  if (p->socket.recvSome(p->buffer.data(), p->buffer.size(), &p->received, &closed) != ncclSuccess) return false;
  if (closed && p->received < p->buffer.size()) {
    INFO(kLogBootstrap | kLogNet, "Dropping connection from %s on %s: closed before its greeting", from.c_str(),
         socketAddressToString(listener_.localAddress()).c_str());
    return false;
  }
  return true;
}

}  // namespace braid
