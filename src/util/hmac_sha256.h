// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written here so that authenticating peers
// needs no crypto library; plus a constant-time compare and a nonce source for handshakes.
#pragma once

#include <nccl.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace braid {

constexpr size_t kSha256Bytes = 32;
using Sha256Digest = std::array<uint8_t, kSha256Bytes>;

// Incremental SHA-256: update() any number of times, then final() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  Sha256Digest final();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

Sha256Digest sha256(const void* data, size_t bytes);

// Incremental HMAC-SHA256 with a key of any length (longer than a block: hashed first).
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t keyBytes);
  void update(const void* data, size_t bytes) { inner_.update(data, bytes); }
  Sha256Digest final();

 private:
  Sha256 inner_;
  std::array<uint8_t, 64> outerPad_{};
};

Sha256Digest hmacSha256(const void* key, size_t keyBytes, const void* data, size_t bytes);

// Compares without an early exit, so that timing does not tell how many leading bytes matched.
bool constantTimeEqual(const void* a, const void* b, size_t bytes);

// Fills `out` from the kernel's random source (getrandom(2)); ncclSystemError with a WARN if it fails.
[[nodiscard]] ncclResult_t randomBytes(void* out, size_t bytes);

}  // namespace braid
