// The proxy GIN transport's two parsers of what it does not control. GFDs (window/gin_gfd.h):
// what device code writes by nccl_device/gin_proxy.h's layout (encoded here from that layout, not
// from the decoder) decodes to exactly its fields, and what no device code writes is refused with a
// reason. Message headers between hosts (window/gin_wire.h): what the sender builds is taken, and
// every lie a peer may tell is refused (short messages, wrong magic or flags, two signal kinds, a VA
// signal with data or without a signal, a signal before the last chunk, a payload size that is not
// the rest of the message, a context out of range), and ranges that wrap do not fit.
#include "window/gin_wire.h"

#include <gtest/gtest.h>
#include <nccl_device/gin_proxy.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/gin_gfd_encode.h"
#include "window/gin_gfd.h"

namespace braid::window {
namespace {

// ---- GFDs

using Fields = testing::GfdFields;
ncclGinProxyGfd_t encode(const Fields& f) { return testing::encodeGfd(f); }

GinOp decoded(const ncclGinProxyGfd_t& g) {
  GinOp op;
  std::string why;
  EXPECT_TRUE(decodeGfd(g, &op, &why)) << why;
  EXPECT_TRUE(why.empty());
  return op;
}

std::string refusal(const ncclGinProxyGfd_t& g) {
  GinOp op;
  std::string why;
  EXPECT_FALSE(decodeGfd(g, &op, &why));
  EXPECT_FALSE(why.empty());
  return why;
}

constexpr uint64_t kMax63 = std::numeric_limits<uint64_t>::max() >> 1;

Fields putWithEverything() {
  Fields f;
  f.op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalAdd;
  f.bytes = (uint64_t{1} << 57) - 1;  // the widest size
  f.srcOffset = kMax63;
  f.srcHandle = kMax63 - 1;
  f.dstOffset = kMax63 - 2;
  f.dstHandle = 0x5555555555555555ull;
  f.counterId = (1u << 23) - 1;
  f.signalId = (1u << 24) - 1;
  f.signalValue = 0xfedcba9876543210ull;
  f.strong = true;
  return f;
}

TEST(GinGfd, APutDecodesToExactlyItsFields) {
  const Fields f = putWithEverything();
  const GinOp op = decoded(encode(f));
  EXPECT_EQ(op.kind, GinOp::Kind::kPut);
  EXPECT_EQ(op.bytes, f.bytes);
  EXPECT_EQ(op.srcOffset, f.srcOffset);
  EXPECT_EQ(op.srcHandle, f.srcHandle);
  EXPECT_EQ(op.dstOffset, f.dstOffset);
  EXPECT_EQ(op.dstHandle, f.dstHandle);
  EXPECT_FALSE(op.hasInline);
  EXPECT_TRUE(op.hasCounter);
  EXPECT_EQ(op.counterId, f.counterId);
  EXPECT_EQ(op.signal, GinOp::Signal::kAdd);
  EXPECT_EQ(op.signalId, f.signalId);
  EXPECT_EQ(op.signalValue, f.signalValue);
  EXPECT_TRUE(op.strong);
}

TEST(GinGfd, FieldsDoNotBleedIntoTheirNeighbours) {
  // Each field alone at its widest, the others zero: nothing else reads back non-zero.
  Fields f;
  f.op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalInc;
  f.counterId = (1u << 23) - 1;
  GinOp op = decoded(encode(f));
  EXPECT_EQ(op.counterId, f.counterId);
  EXPECT_EQ(op.signalId, 0u);
  EXPECT_EQ(op.signalValue, 0u);
  EXPECT_EQ(op.signal, GinOp::Signal::kInc);
  EXPECT_FALSE(op.strong);
  f.counterId = 0;
  f.signalId = (1u << 24) - 1;
  op = decoded(encode(f));
  EXPECT_EQ(op.counterId, 0u);
  EXPECT_EQ(op.signalId, f.signalId);
  EXPECT_EQ(op.signalValue, 0u);
  // A signal value's parts: bits 0-15 in word 5, 16-31 and 32-63 in word 6.
  for (uint64_t value : {uint64_t{0xffff}, uint64_t{0xffff0000}, uint64_t{0xffffffff00000000}, uint64_t{1} << 63}) {
    f.signalId = 0;
    f.op = ncclGinProxyOpPut | ncclGinProxyOpWithSignalAdd;
    f.signalValue = value;
    op = decoded(encode(f));
    EXPECT_EQ(op.signalValue, value);
    EXPECT_EQ(op.signalId, 0u);
    EXPECT_EQ(op.counterId, 0u);
    EXPECT_FALSE(op.strong);
  }
}

TEST(GinGfd, InlineValuesOfEachSize) {
  const uint64_t values[] = {0xa5, 0xbeef, 0xdeadbeef, 0xfedcba9876543210ull};
  const uint64_t sizes[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    Fields f;
    f.op = ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithSignalInc;
    f.bytes = sizes[i];
    f.hasInline = true;
    f.inlineValue = values[i];
    f.dstOffset = 8 * i;
    f.dstHandle = 3;
    f.signalId = 1;
    const GinOp op = decoded(encode(f));
    EXPECT_TRUE(op.hasInline) << sizes[i];
    EXPECT_EQ(op.bytes, sizes[i]);
    EXPECT_EQ(op.inlineValue, values[i]);
    EXPECT_EQ(op.srcHandle, 0u);  // no source window: the value is the payload
    EXPECT_EQ(op.dstOffset, f.dstOffset);
    EXPECT_EQ(op.dstHandle, 3u);
  }
}

TEST(GinGfd, VaSignalGetAndFlush) {
  Fields va;
  va.op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalInc;
  va.srcOffset = kMax63 - 7;  // the signal word's offset and window share the source's words
  va.srcHandle = 12;
  GinOp op = decoded(encode(va));
  EXPECT_EQ(op.kind, GinOp::Kind::kVaSignal);
  EXPECT_EQ(op.signal, GinOp::Signal::kInc);
  EXPECT_EQ(op.vaOffset, va.srcOffset);
  EXPECT_EQ(op.vaHandle, 12u);
  va.op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalAdd;
  va.signalValue = 0x8000000000000001ull;
  op = decoded(encode(va));
  EXPECT_EQ(op.signal, GinOp::Signal::kAdd);
  EXPECT_EQ(op.signalValue, va.signalValue);

  Fields get;
  get.op = ncclGinProxyOpGet;
  get.bytes = 1 << 30;
  get.srcOffset = 4096;
  get.srcHandle = 7;
  get.dstOffset = kMax63;
  get.dstHandle = 8;
  op = decoded(encode(get));
  EXPECT_EQ(op.kind, GinOp::Kind::kGet);
  EXPECT_EQ(op.bytes, get.bytes);
  EXPECT_EQ(op.srcOffset, 4096u);
  EXPECT_EQ(op.srcHandle, 7u);
  EXPECT_EQ(op.dstOffset, kMax63);
  EXPECT_EQ(op.dstHandle, 8u);

  Fields flush;
  flush.op = ncclGinProxyOpFlush;
  EXPECT_EQ(decoded(encode(flush)).kind, GinOp::Kind::kFlush);
}

TEST(GinGfd, AMissingFlagInAnyWordIsNotWritten) {
  const ncclGinProxyGfd_t good = encode(putWithEverything());
  EXPECT_TRUE(gfdWritten(good));
  for (int i = 0; i < ncclGinProxyGfdQwords; ++i) {
    ncclGinProxyGfd_t g = good;
    g.qword[i] &= ~uint64_t{1};
    EXPECT_FALSE(gfdWritten(g)) << "word " << i;
    EXPECT_FALSE(refusal(g).empty()) << "word " << i;
  }
  EXPECT_FALSE(gfdWritten(ncclGinProxyGfd_t{}));
}

TEST(GinGfd, WhatNoDeviceCodeWritesIsRefused) {
  const Fields put = putWithEverything();
  for (uint64_t version : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{15}}) {
    ncclGinProxyGfd_t g = encode(put);
    g.qword[0] = (g.qword[0] & ~uint64_t{0x1e}) | version << 1;
    EXPECT_NE(refusal(g).find("version"), std::string::npos) << version;
  }
  for (int bit = 8; bit < 16; ++bit) {  // op bits past ncclGinProxyOpFlush
    Fields f = put;
    f.op |= 1u << bit;
    refusal(encode(f));
  }
  Fields f = put;
  f.op = 0;  // no kind
  refusal(encode(f));
  const uint32_t kinds[] = {ncclGinProxyOpPut, ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalInc, ncclGinProxyOpGet,
                            ncclGinProxyOpFlush};
  for (uint32_t a : kinds) {
    for (uint32_t b : kinds) {
      if (a == b) continue;
      f.op = a | b;  // two kinds at once
      refusal(encode(f));
    }
  }
  f.op = ncclGinProxyOpPut | ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithSignalAdd;
  refusal(encode(f));
  f.op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithSignalAdd;
  f.bytes = 0;
  refusal(encode(f));
}

TEST(GinGfd, BadPutsAndVaSignalsAreRefused) {
  Fields va;
  va.op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalAdd;
  va.srcHandle = 3;
  va.bytes = 8;  // with data
  refusal(encode(va));
  va.bytes = 0;
  va.op = ncclGinProxyOpVASignal;  // without a signal op
  refusal(encode(va));

  Fields value;
  value.op = ncclGinProxyOpPut | ncclGinProxyOpWithInline;
  value.hasInline = true;
  value.dstHandle = 2;
  value.bytes = 9;
  EXPECT_NE(refusal(encode(value)).find("inline"), std::string::npos);
  value.bytes = uint64_t{1} << 40;
  refusal(encode(value));
  value.bytes = 8;
  value.dstHandle = 0;  // data without a destination
  refusal(encode(value));

  Fields put = putWithEverything();
  put.dstHandle = 0;
  refusal(encode(put));
  put = putWithEverything();
  put.srcHandle = 0;  // data without a source
  refusal(encode(put));
  put.bytes = 0;  // a signal alone needs neither
  put.dstHandle = 0;
  EXPECT_EQ(decoded(encode(put)).signal, GinOp::Signal::kAdd);
}

TEST(GinGfd, ModifiersAKindDoesNotTakeAreRefused) {
  Fields get;
  get.op = ncclGinProxyOpGet;
  get.bytes = 64;
  get.srcHandle = 4;
  get.dstHandle = 5;
  EXPECT_EQ(decoded(encode(get)).kind, GinOp::Kind::kGet);
  get.op = ncclGinProxyOpGet | ncclGinProxyOpWithCounter;
  refusal(encode(get));
  get.op = ncclGinProxyOpGet;
  get.srcHandle = 0;  // data from no window
  refusal(encode(get));
  Fields flush;
  flush.op = ncclGinProxyOpFlush;
  EXPECT_EQ(decoded(encode(flush)).kind, GinOp::Kind::kFlush);
  flush.bytes = 8;
  refusal(encode(flush));
  flush.bytes = 0;
  flush.op = ncclGinProxyOpFlush | ncclGinProxyOpWithSignalInc;
  refusal(encode(flush));
  Fields va;
  va.op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithCounter;
  va.srcHandle = 3;
  refusal(encode(va));
}

TEST(GinGfd, AReasonNamesTheOpInHex) {
  Fields f;
  f.op = 0x1234;
  const std::string why = refusal(encode(f));
  EXPECT_NE(why.find("0x1234"), std::string::npos) << why;
  f.op = ncclGinProxyOpGet | ncclGinProxyOpFlush;
  EXPECT_NE(refusal(encode(f)).find("0xc0"), std::string::npos);
}

// ---- Message headers between hosts

GinHeader header(uint32_t flags, uint64_t offset, uint64_t bytes, uint32_t context) {
  GinHeader h{};
  h.magic = kGinMagic;
  h.flags = flags;
  h.devComm = 17;
  h.serial = 9;
  h.offset = offset;
  h.bytes = bytes;
  h.value = 1;
  h.context = context;
  return h;
}

std::vector<char> message(const GinHeader& h, size_t payload) {
  std::vector<char> m(sizeof(h) + payload, 'x');
  std::memcpy(m.data(), &h, sizeof(h));
  return m;
}

bool parses(const GinHeader& h, size_t payload, uint32_t maxContexts, GinHeader* got = nullptr) {
  const std::vector<char> m = message(h, payload);
  GinHeader out{};
  std::string why;
  const bool ok = parseGin(m.data(), m.size(), maxContexts, &out, &why);
  EXPECT_EQ(ok, why.empty()) << why;
  if (got != nullptr) *got = out;
  return ok;
}

TEST(GinWire, WhatTheSenderBuildsIsTaken) {
  GinHeader sent = header(kGinLast | kGinSignalAdd, 4096, 100, 3);
  sent.value = 0xfedcba9876543210ull;
  sent.signal = 5;
  GinHeader got{};
  ASSERT_TRUE(parses(sent, 100, 4, &got));
  EXPECT_EQ(std::memcmp(&got, &sent, sizeof(got)), 0);
  EXPECT_TRUE(isGinMessage(message(sent, 100).data(), sizeof(sent) + 100));
  EXPECT_TRUE(parses(header(0, 0, 300, 0), 300, 1));                     // a chunk before the last
  EXPECT_TRUE(parses(header(kGinLast, 0, 0, 0), 0, 1));                  // a put's empty last chunk
  EXPECT_TRUE(parses(header(kGinLast | kGinSignalInc, 0, 0, 0), 0, 1));  // a signal alone
  EXPECT_TRUE(parses(header(kGinVaSignal | kGinLast | kGinSignalInc, 8, 0, 0), 0, 1));
  EXPECT_TRUE(parses(header(kGinVaSignal | kGinLast | kGinSignalAdd, 8, 0, 0), 0, 1));
}

TEST(GinWire, LiesAreRefused) {
  GinHeader got{};
  std::string why;
  const std::vector<char> good = message(header(0, 0, 8, 0), 8);
  EXPECT_FALSE(parseGin(good.data(), sizeof(GinHeader) - 1, 1, &got, &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(parseGin(good.data(), good.size() - 1, 1, &got, &why));  // payload size is not the rest
  EXPECT_TRUE(parseGin(good.data(), good.size(), 1, &got, &why)) << why;
  GinHeader h = header(0, 0, 8, 0);
  h.magic ^= 1;
  EXPECT_FALSE(parses(h, 8, 1));
  EXPECT_FALSE(isGinMessage(message(h, 8).data(), sizeof(h) + 8));
  EXPECT_FALSE(isGinMessage(good.data(), 3));
  EXPECT_FALSE(parses(header(16, 0, 8, 0), 8, 1));                                        // unknown flag
  EXPECT_FALSE(parses(header(kGinLast | 0x80000000u, 0, 8, 0), 8, 1));                    // unknown flag
  EXPECT_FALSE(parses(header(kGinLast | kGinSignalInc | kGinSignalAdd, 0, 0, 0), 0, 1));  // two kinds
  EXPECT_FALSE(parses(header(kGinSignalInc, 0, 8, 0), 8, 1));                             // signal, not last
  EXPECT_FALSE(parses(header(kGinVaSignal | kGinLast, 8, 0, 0), 0, 1));                   // VA without a signal
  EXPECT_FALSE(parses(header(kGinVaSignal | kGinLast | kGinSignalInc, 8, 8, 0), 8, 1));   // VA with data
  EXPECT_FALSE(parses(header(kGinVaSignal | kGinSignalInc, 8, 0, 0), 0, 1));              // VA not last
  EXPECT_FALSE(parses(header(0, 0, 8, 1), 8, 1));                                         // context 1 of 1
  EXPECT_FALSE(parses(header(0, 0, 8, ~0u), 8, 16));
  EXPECT_TRUE(parses(header(0, 0, 8, 15), 8, 16));
  h = header(0, 0, std::numeric_limits<uint64_t>::max(), 0);  // a size that no message has
  EXPECT_FALSE(parses(h, 8, 1));
  h = header(kGinLast | kGinSignalInc, 0, 8, 0);
  EXPECT_TRUE(parses(h, 8, 1));
  h.value = 2;  // an increment by more than 1
  EXPECT_FALSE(parses(h, 8, 1));
  h = header(0, 0, 8, 0);
  h.tag = 1;  // a tag on a put
  EXPECT_FALSE(parses(h, 8, 1));
}

TEST(GinWire, GetsCarryATagAndNothingElse) {
  GinHeader request = header(kGinGetRequest | kGinLast, 4096, 0, 0);
  request.value = 1 << 20;  // the size asked for
  request.tag = 7;
  EXPECT_TRUE(parses(request, 0, 1));
  GinHeader reply = header(kGinGetReply, 0, 300, 0);
  reply.tag = 7;
  EXPECT_TRUE(parses(reply, 300, 1));
  reply.flags |= kGinLast;
  EXPECT_TRUE(parses(reply, 300, 1));
  GinHeader bad = request;
  bad.tag = 0;  // a get without a tag
  EXPECT_FALSE(parses(bad, 0, 1));
  bad = request;
  bad.flags &= ~kGinLast;
  EXPECT_FALSE(parses(bad, 0, 1));
  bad = header(kGinGetRequest | kGinLast, 0, 8, 0);  // a request with data
  bad.tag = 7;
  EXPECT_FALSE(parses(bad, 8, 1));
  bad = reply;
  bad.flags |= kGinGetRequest;  // both
  EXPECT_FALSE(parses(bad, 300, 1));
  bad = reply;
  bad.flags |= kGinSignalInc;  // a signal on a get's message
  EXPECT_FALSE(parses(bad, 300, 1));
}

TEST(GinWire, RangesThatWrapDoNotFit) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(ginFits(4096, 100, 4196));
  EXPECT_FALSE(ginFits(4096, 101, 4196));
  EXPECT_FALSE(ginFits(kMax - 4, 16, kMax));
  EXPECT_FALSE(ginFits(8, kMax, 1 << 20));
  EXPECT_FALSE(ginFits(4197, 0, 4196));       // empty, past the end
  EXPECT_TRUE(ginFits(1 << 20, 0, 1 << 20));  // empty, at the end
  EXPECT_TRUE(ginFits(0, kMax, kMax));
}

}  // namespace
}  // namespace braid::window
