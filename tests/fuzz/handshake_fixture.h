// The key and challenge that the socket_handshake harness checks proofs against, shared with
// make_corpus so that the committed corpus holds handshakes that prove it (and the fuzzer starts
// from the accepting paths, not only the refusals).
#pragma once

#include <cstdint>

#include "util/socket_auth.h"

namespace braid::fuzz {

inline SocketAuthKey handshakeKey() {
  SocketAuthKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0xa5 ^ (i * 7));
  return key;
}

inline SocketNonce handshakeChallenge() {
  SocketNonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(0x3c + i * 11);
  return nonce;
}

}  // namespace braid::fuzz
