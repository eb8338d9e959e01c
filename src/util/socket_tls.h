// The TLS layer of one Socket (see "Encryption" in socket.h; the sessions are util/tls.h's): the
// process's TLS setting the socket took when it was made and, from the TLS handshake on, the
// connection's session. Its WARNs name the peer through the Socket that owns it.
#pragma once

#include <nccl.h>
#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <string>

namespace braid {

class Socket;
class TlsContext;
class TlsSession;
enum class TlsStatus;

class SocketTls {
 public:
  SocketTls();
  SocketTls(SocketTls&& other) noexcept;
  SocketTls& operator=(SocketTls&& other) noexcept;
  ~SocketTls();

  // The setting: null where the socket goes in plain text.
  void setContext(std::shared_ptr<const TlsContext> context) { context_ = std::move(context); }
  const std::shared_ptr<const TlsContext>& context() const { return context_; }
  bool encrypts() const { return context_ != nullptr; }

  // Starts the session of a connection whose proofs are done, on `fd`, in either role.
  [[nodiscard]] ncclResult_t start(int fd, bool acceptor);
  bool inSession() const { return session_ != nullptr; }
  TlsSession& session() { return *session_; }
  void endSession();

  // The connector's handshake: one step; *done once complete. One WARN naming the peer on failure.
  [[nodiscard]] ncclResult_t handshake(const Socket& owner, bool* done);
  // Whether the handshake has yet to complete (an accepted connection is not ready until then), and
  // whether it waits to write.
  bool handshaking() const;
  bool handshakeWantsWrite() const;
  // Input taken from the kernel and not yet read (a record read in part).
  bool hasBufferedInput() const;

  // Socket::sendSomeV and Socket::recvOnce through the session.
  [[nodiscard]] ncclResult_t sendV(const Socket& owner, const iovec* iov, int count, size_t* sent);
  [[nodiscard]] ncclResult_t recv(const Socket& owner, void* data, size_t bytes, size_t* got, bool* closed);

  // "<who>: <what differs>; ..." for a peer whose encryption setting (`peerEncrypts`) is not this
  // end's: one WARN.
  void warnMismatch(const std::string& who, bool peerEncrypts) const;

 private:
  [[nodiscard]] ncclResult_t sendFailed(const Socket& owner, TlsStatus status) const;

  std::shared_ptr<const TlsContext> context_;
  std::unique_ptr<TlsSession> session_;
};

}  // namespace braid
