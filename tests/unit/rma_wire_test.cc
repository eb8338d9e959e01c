// The chunk header of one-sided operations between hosts: what the sender builds is what the
// receiver takes, and every lie a peer may tell is refused (short messages, wrong magic or flags,
// a payload size that is not the rest of the message, contexts and signals out of range, ranges
// past the window, ranges that wrap around).
#include "window/rma_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace braid::window {
namespace {

std::vector<char> message(const ChunkHeader& h, size_t payload) {
  std::vector<char> m(sizeof(h) + payload, 'x');
  std::memcpy(m.data(), &h, sizeof(h));
  return m;
}

TEST(RmaWire, WhatTheSenderBuildsIsTaken) {
  const ChunkHeader sent = chunkHeader(9, 4096, 100, 2, 1, true);
  const std::vector<char> m = message(sent, 100);
  ChunkHeader got{};
  std::string why;
  ASSERT_TRUE(parseChunk(m.data(), m.size(), 4, 2, &got, &why)) << why;
  EXPECT_EQ(got.serial, 9u);
  EXPECT_EQ(got.offset, 4096u);
  EXPECT_EQ(got.bytes, 100u);
  EXPECT_EQ(got.flags, kLastChunk);
  EXPECT_TRUE(chunkFits(got, 4196));
  EXPECT_FALSE(chunkFits(got, 4195));
}

TEST(RmaWire, LiesAreRefused) {
  ChunkHeader got{};
  std::string why;
  const std::vector<char> good = message(chunkHeader(1, 0, 8, 0, 0, false), 8);
  EXPECT_FALSE(parseChunk(good.data(), sizeof(ChunkHeader) - 1, 1, 1, &got, &why));
  EXPECT_FALSE(parseChunk(good.data(), good.size() - 1, 1, 1, &got, &why));  // payload size is not the rest
  ChunkHeader h = chunkHeader(1, 0, 8, 0, 0, false);
  h.magic ^= 1;
  EXPECT_FALSE(parseChunk(message(h, 8).data(), sizeof(h) + 8, 1, 1, &got, &why));
  h = chunkHeader(1, 0, 8, 0, 0, false);
  h.flags = 4;
  EXPECT_FALSE(parseChunk(message(h, 8).data(), sizeof(h) + 8, 1, 1, &got, &why));
  h = chunkHeader(1, 0, 8, 1, 0, false);
  EXPECT_FALSE(parseChunk(message(h, 8).data(), sizeof(h) + 8, 1, 1, &got, &why));  // context 1 of 1
  h = chunkHeader(1, 0, 8, 0, -1, false);
  EXPECT_FALSE(parseChunk(message(h, 8).data(), sizeof(h) + 8, 1, 1, &got, &why));
  EXPECT_FALSE(why.empty());
}

TEST(RmaWire, RangesThatWrapDoNotFit) {
  ChunkHeader h = chunkHeader(1, std::numeric_limits<uint64_t>::max() - 4, 16, 0, 0, true);
  EXPECT_FALSE(chunkFits(h, std::numeric_limits<uint64_t>::max()));
  h = chunkHeader(1, 8, std::numeric_limits<uint64_t>::max(), 0, 0, true);
  EXPECT_FALSE(chunkFits(h, 1 << 20));
  h = chunkHeader(1, 1 << 20, 0, 0, 0, true);
  EXPECT_TRUE(chunkFits(h, 1 << 20));  // empty, at the end
}

}  // namespace
}  // namespace braid::window
