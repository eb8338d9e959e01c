// SHA-256 per FIPS 180-4 section 6.2, HMAC per RFC 2104.
#include "util/hmac_sha256.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/log.h"

namespace braid {

namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::array<uint32_t, 8> kInitialHash = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256() : h_(kInitialHash) {}

void Sha256::block(const uint8_t* p) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) {
    const uint8_t* q = p + 4 * static_cast<size_t>(t);
    w[t] = (uint32_t{q[0]} << 24) | (uint32_t{q[1]} << 16) | (uint32_t{q[2]} << 8) | q[3];
  }
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRoundConstants[t] + w[t];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

void Sha256::update(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  totalBytes_ += bytes;
  while (bytes > 0) {
    const size_t take = std::min(bytes, buffer_.size() - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    bytes -= take;
    if (buffered_ == buffer_.size()) {
      block(buffer_.data());
      buffered_ = 0;
    }
  }
}

Sha256Digest Sha256::final() {
  // Padding: a 1 bit, zeros up to 56 mod 64 bytes, then the message length in bits, big-endian.
  const uint64_t bits = totalBytes_ * 8;
  const uint8_t one = 0x80;
  update(&one, 1);
  const uint8_t zero = 0;
  while (buffered_ != 56) update(&zero, 1);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(length, sizeof(length));
  Sha256Digest out;
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
  }
  return out;
}

Sha256Digest sha256(const void* data, size_t bytes) {
  Sha256 s;
  s.update(data, bytes);
  return s.final();
}

HmacSha256::HmacSha256(const void* key, size_t keyBytes) {
  std::array<uint8_t, 64> k{};
  if (keyBytes > k.size()) {
    const Sha256Digest d = sha256(key, keyBytes);
    std::memcpy(k.data(), d.data(), d.size());
  } else if (keyBytes > 0) {
    std::memcpy(k.data(), key, keyBytes);
  }
  std::array<uint8_t, 64> innerPad;
  for (size_t i = 0; i < k.size(); ++i) {
    innerPad[i] = k[i] ^ 0x36;
    outerPad_[i] = k[i] ^ 0x5c;
  }
  inner_.update(innerPad.data(), innerPad.size());
}

Sha256Digest HmacSha256::final() {
  const Sha256Digest innerDigest = inner_.final();
  Sha256 outer;
  outer.update(outerPad_.data(), outerPad_.size());
  outer.update(innerDigest.data(), innerDigest.size());
  return outer.final();
}

Sha256Digest hmacSha256(const void* key, size_t keyBytes, const void* data, size_t bytes) {
  HmacSha256 h(key, keyBytes);
  h.update(data, bytes);
  return h.final();
}

bool constantTimeEqual(const void* a, const void* b, size_t bytes) {
  const volatile uint8_t* x = static_cast<const volatile uint8_t*>(a);
  const volatile uint8_t* y = static_cast<const volatile uint8_t*>(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < bytes; ++i) diff = static_cast<uint8_t>(diff | (x[i] ^ y[i]));
  return diff == 0;
}

ncclResult_t randomBytes(void* out, size_t bytes) {
  uint8_t* p = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    const ssize_t n = ::getrandom(p, bytes, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      WARN("getrandom() failed: %s (errno %d); no nonce for a connection handshake", strerror(err), err);
      return ncclSystemError;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return ncclSuccess;
}

}  // namespace braid
