// The connecting end of a connection while it is made (see socket.h for the handshake): TCP's
// connect, then the acceptor's challenge, this end's proof and the acceptor's proof, then TLS where
// this process encrypts. Socket::connect drives one to the end; callers that must not wait for the
// acceptor (the socket network opens several connections at once) move it on themselves.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/socket.h"

namespace braid {

class SocketConnector {
 public:
  // Returns after TCP's connect, which the peer's kernel completes alone (retries and failures as
  // Socket::connect says).
  [[nodiscard]] static ncclResult_t start(const SocketAddress& remote, uint64_t magic, SocketType type,
                                          const std::string& peerDescription, bool retryRefused,
                                          const Deadline& deadline, SocketConnector* out);
  [[nodiscard]] static ncclResult_t start(const SocketAddress& remote, const SocketAuthKey& key, SocketType type,
                                          const std::string& peerDescription, bool retryRefused,
                                          const Deadline& deadline, SocketConnector* out);

  // Moves the handshake on without blocking; sets *done once it is complete (and again on every
  // later call). After a failure every later call fails the same way.
  [[nodiscard]] ncclResult_t progress(bool* done);
  // While the handshake runs: wait for POLLOUT when true, else POLLIN.
  bool wantsWrite() const;

  int fd() const { return socket_.fd(); }
  bool valid() const { return socket_.valid(); }
  // The connection; whole once progress said done.
  Socket& socket() { return socket_; }

 private:
  // The proofs' part of the handshake while it runs.
  struct Auth {
    bool active = false;
    bool replied = false;
    SocketNonce acceptorNonce{};
    SocketNonce connectorNonce{};
    SocketProof acceptorProof{};
    size_t got = 0;  // of acceptor nonce + acceptor proof
    std::array<uint8_t, kSocketHandshakeBytes> reply{};
    size_t sent = 0;
  };

  [[nodiscard]] ncclResult_t advance(bool* done);
  [[nodiscard]] ncclResult_t proofProgress();
  [[nodiscard]] ncclResult_t checkAcceptorProof();

  Socket socket_;
  SocketAuthKey key_{};  // wiped once the acceptor's proof is checked
  Auth auth_;
  ncclResult_t failure_ = ncclSuccess;  // the first error progress returned
};

}  // namespace braid
