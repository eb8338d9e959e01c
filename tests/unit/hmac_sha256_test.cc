// SHA-256 against FIPS 180-4's examples, HMAC-SHA256 against RFC 4231's test cases, the
// constant-time compare and the nonce source.
#include "util/hmac_sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace braid {
namespace {

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s;
}
std::string hex(const Sha256Digest& d) { return hex(d.data(), d.size()); }

std::string hmacHex(const std::vector<uint8_t>& key, const std::string& data) {
  return hex(hmacSha256(key.data(), key.size(), data.data(), data.size()));
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(hex(sha256(two.data(), two.size())), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a', fed in uneven pieces: block boundaries fall inside updates.
  Sha256 s;
  const std::string piece(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, piece.size());
    s.update(piece.data(), n);
    left -= n;
  }
  EXPECT_EQ(hex(s.final()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HmacSha256, Rfc4231TestCases) {
  // Case 1.
  EXPECT_EQ(hmacHex(std::vector<uint8_t>(20, 0x0b), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Case 2: a key shorter than the output.
  EXPECT_EQ(hmacHex({'J', 'e', 'f', 'e'}, "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Case 3.
  EXPECT_EQ(hmacHex(std::vector<uint8_t>(20, 0xaa), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // Case 4.
  std::vector<uint8_t> key4;
  for (uint8_t i = 1; i <= 25; ++i) key4.push_back(i);
  EXPECT_EQ(hmacHex(key4, std::string(50, '\xcd')), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Case 5: truncated to 128 bits.
  EXPECT_EQ(hmacHex(std::vector<uint8_t>(20, 0x0c), "Test With Truncation").substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
  // Cases 6 and 7: a key longer than a block is hashed first.
  const std::vector<uint8_t> longKey(131, 0xaa);
  EXPECT_EQ(hmacHex(longKey, "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmacHex(longKey,
                    "This is a test using a larger than block-size key and a larger than block-size data. The key "
                    "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, IncrementalEqualsOneShot) {
  const std::string key = "k", data = "the quick brown fox jumps over the lazy dog, more than one block of it........";
  HmacSha256 h(key.data(), key.size());
  for (char c : data) h.update(&c, 1);
  EXPECT_EQ(hex(h.final()), hex(hmacSha256(key.data(), key.size(), data.data(), data.size())));
}

TEST(HmacSha256, ConstantTimeEqual) {
  uint8_t a[32], b[32];
  for (int i = 0; i < 32; ++i) a[i] = b[i] = static_cast<uint8_t>(i * 7);
  EXPECT_TRUE(constantTimeEqual(a, b, sizeof(a)));
  for (int i : {0, 15, 31}) {
    b[i] ^= 1;
    EXPECT_FALSE(constantTimeEqual(a, b, sizeof(a))) << i;
    b[i] ^= 1;
  }
  EXPECT_TRUE(constantTimeEqual(a, b, 0));
}

TEST(HmacSha256, NoncesDiffer) {
  uint8_t a[16] = {}, b[16] = {};
  ASSERT_EQ(randomBytes(a, sizeof(a)), ncclSuccess);
  ASSERT_EQ(randomBytes(b, sizeof(b)), ncclSuccess);
  EXPECT_NE(hex(a, sizeof(a)), hex(b, sizeof(b)));
  EXPECT_NE(hex(a, sizeof(a)), std::string(32, '0'));
}

}  // namespace
}  // namespace braid
