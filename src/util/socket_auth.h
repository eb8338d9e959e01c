// Challenge-response authentication of socket handshakes (see socket.h for the exchange).
//
// The key of a listener/connector pair is HMAC-SHA256(configured secret, "braid-key-v1" || magic):
// the magic is what both ends share (the unique id's word, or a listener's random word published
// through the bootstrap); the configured secret is BRAID_COMM_SECRET, or the first line of
// BRAID_COMM_SECRET_FILE, and empty when neither is set. Each side proves that it holds the key
// with HMAC(key, "braid-v1" || role || type || acceptor nonce || connector nonce), so neither the
// key nor the magic nor the secret ever crosses the wire, and a recorded exchange is useless
// against a fresh nonce.
#pragma once

#include <nccl.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace braid {

constexpr size_t kSocketNonceBytes = 16;
constexpr size_t kSocketProofBytes = 32;
using SocketAuthKey = std::array<uint8_t, 32>;
using SocketNonce = std::array<uint8_t, kSocketNonceBytes>;
using SocketProof = std::array<uint8_t, kSocketProofBytes>;

enum class SocketAuthRole : uint8_t { kConnector = 'C', kAcceptor = 'A' };

// The key for `magic`, mixing in the configured secret. An unreadable or empty
// BRAID_COMM_SECRET_FILE fails with ncclInvalidUsage and a WARN naming the file (never its text).
[[nodiscard]] ncclResult_t socketAuthKey(uint64_t magic, SocketAuthKey* out);
// Whether BRAID_COMM_SECRET or BRAID_COMM_SECRET_FILE is set.
bool socketAuthSecretConfigured();
SocketProof socketAuthProof(const SocketAuthKey& key, SocketAuthRole role, uint32_t type, const SocketNonce& acceptor,
                            const SocketNonce& connector);
// For a job whose magic is public (NCCL_COMM_ID): one WARN per process when no secret is set.
void socketAuthWarnIfUnauthenticated();

}  // namespace braid
