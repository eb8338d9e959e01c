// The first bytes any stranger sends a Braid listener after its challenge: the connector's
// handshake message (type, nonce, proof), parsed by parseSocketHandshake and checked by
// socketHandshakeProves before the listener reads anything else; then, in the input's next 32
// bytes if present, the acceptor's proof that the connector checks with socketAcceptorProofValid.
// Proofs are checked against the fixed key and challenge of handshake_fixture.h.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_check.h"
#include "handshake_fixture.h"
#include "util/socket.h"
#include "util/socket_auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace braid;
  SocketHandshake h{};
  if (parseSocketHandshake(data, size, &h) != ncclSuccess) {
    FUZZ_CHECK(size < kSocketHandshakeBytes);
    return 0;
  }
  FUZZ_CHECK(size >= kSocketHandshakeBytes);
  // What the parser read is what a connecting socket would have sent for it.
  uint8_t again[kSocketHandshakeBytes];
  encodeSocketHandshake(h, again);
  FUZZ_CHECK(std::memcmp(again, data, sizeof(again)) == 0);

  const SocketAuthKey key = fuzz::handshakeKey();
  const SocketNonce challenge = fuzz::handshakeChallenge();
  const bool proves = socketHandshakeProves(h, key, challenge);
  FUZZ_CHECK(proves ==
             (h.proof == socketAuthProof(key, SocketAuthRole::kConnector, h.type, challenge, h.connectorNonce)));
  // A proof holds only for its key and its challenge: another job's secret or a replay fails.
  SocketAuthKey otherKey = key;
  otherKey[0] ^= 1;
  SocketNonce otherChallenge = challenge;
  otherChallenge[0] ^= 1;
  FUZZ_CHECK(!proves || !socketHandshakeProves(h, otherKey, challenge));
  FUZZ_CHECK(!proves || !socketHandshakeProves(h, key, otherChallenge));
  // A valid connector proof sent back is not the acceptor's: a reflecting stranger fails. (Any
  // bytes may stand in a connector's proof field, the acceptor's answer among them.)
  FUZZ_CHECK(!proves || !socketAcceptorProofValid(key, h.type, challenge, h.connectorNonce, h.proof));

  if (size >= kSocketHandshakeBytes + kSocketProofBytes) {
    SocketProof answer{};
    std::memcpy(answer.data(), data + kSocketHandshakeBytes, answer.size());
    const bool valid = socketAcceptorProofValid(key, h.type, challenge, h.connectorNonce, answer);
    FUZZ_CHECK(valid ==
               (answer == socketAuthProof(key, SocketAuthRole::kAcceptor, h.type, challenge, h.connectorNonce)));
    FUZZ_CHECK(!valid || !socketAcceptorProofValid(otherKey, h.type, challenge, h.connectorNonce, answer));
  }
  return 0;
}
