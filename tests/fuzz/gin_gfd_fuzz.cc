// What device code (a kernel's bug, a stray store) may leave in a slot of a proxy GIN ring: one
// 128-byte descriptor (window/gin_gfd.h). Input: the GFD's 16 little-endian words; a shorter input
// is padded with zero bytes (so its tail words lack the written flag), bytes past 128 are ignored.
// An accepted GFD says of itself what decodeGfd promises, each field recomputed here from the raw
// words by gin_proxy.h's documented layout (every flag set, version 2, exactly one of put / VA
// signal / get / flush, a VA signal with a signal and no data, an inline payload of at most 8
// bytes, a put's data with its windows, one signal kind); a refused one comes with a reason.
#include <nccl_device/gin_proxy.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "window/gin_gfd.h"

namespace {

using braid::window::GinOp;

uint64_t field(uint64_t word, int first, int count) { return (word >> first) & ((uint64_t{1} << count) - 1); }

// The fields every accepted op shares: size, op bits, and the kind they name.
void checkCommon(const uint64_t* w, const GinOp& g) {
  for (int i = 0; i < ncclGinProxyGfdQwords; ++i) FUZZ_CHECK((w[i] & 1) == 1);
  FUZZ_CHECK(field(w[ncclGinProxyGfdHeader], 1, 4) == NCCL_GIN_PROXY_GFD_VERSION);
  FUZZ_CHECK(g.bytes == w[ncclGinProxyGfdHeader] >> 7);
  const uint64_t op = field(w[ncclGinProxyGfdHeaderExt], 8, 16);
  FUZZ_CHECK((op & ~uint64_t{0xff}) == 0);  // only the eight known op bits
  const bool put = (op & ncclGinProxyOpPut) != 0, va = (op & ncclGinProxyOpVASignal) != 0;
  const bool get = (op & ncclGinProxyOpGet) != 0, flush = (op & ncclGinProxyOpFlush) != 0;
  FUZZ_CHECK(int(put) + int(va) + int(get) + int(flush) == 1);
  FUZZ_CHECK(put == (g.kind == GinOp::Kind::kPut) && va == (g.kind == GinOp::Kind::kVaSignal) &&
             get == (g.kind == GinOp::Kind::kGet) && flush == (g.kind == GinOp::Kind::kFlush));
}

// A put's or a VA signal's signal: the kind from the op bits, the value from its three parts.
void checkSignal(const uint64_t* w, const GinOp& g) {
  const uint64_t op = field(w[ncclGinProxyGfdHeaderExt], 8, 16);
  const bool inc = (op & ncclGinProxyOpWithSignalInc) != 0, add = (op & ncclGinProxyOpWithSignalAdd) != 0;
  FUZZ_CHECK(!(inc && add));
  FUZZ_CHECK(g.signal == (inc ? GinOp::Signal::kInc : add ? GinOp::Signal::kAdd : GinOp::Signal::kNone));
  const uint64_t completion = w[ncclGinProxyGfdCompletion], sv = w[ncclGinProxyGfdSignalVal];
  // Value bits 0-15: completion bits 48-63; 16-31: signal word bits 8-23; 32-63: its bits 24-55.
  const uint64_t value = (completion >> 48) | field(sv, 8, 16) << 16 | field(sv, 24, 32) << 32;
  FUZZ_CHECK(g.signalValue == value);
  FUZZ_CHECK(g.signalId == field(completion, 24, 24));
  FUZZ_CHECK(g.strong == (field(sv, 1, 1) != 0));
}

void checkPut(const uint64_t* w, const GinOp& g) {
  const uint64_t op = field(w[ncclGinProxyGfdHeaderExt], 8, 16);
  FUZZ_CHECK(g.hasCounter == ((op & ncclGinProxyOpWithCounter) != 0));
  FUZZ_CHECK(g.counterId == field(w[ncclGinProxyGfdCompletion], 1, 23));
  FUZZ_CHECK(g.hasInline == ((op & ncclGinProxyOpWithInline) != 0));
  FUZZ_CHECK(g.dstOffset == w[ncclGinProxyGfdDstOff] >> 1 && g.dstHandle == w[ncclGinProxyGfdDstHandle] >> 1);
  if (g.hasInline) {
    FUZZ_CHECK(g.bytes <= sizeof(g.inlineValue));  // the sender copies `bytes` bytes of it
    const uint64_t value = field(w[ncclGinProxyGfdInlineLow], 8, 48) | field(w[ncclGinProxyGfdInlineHigh], 8, 16) << 48;
    FUZZ_CHECK(g.inlineValue == value);
  } else {
    FUZZ_CHECK(g.srcOffset == w[ncclGinProxyGfdSrcOff] >> 1 && g.srcHandle == w[ncclGinProxyGfdSrcHandle] >> 1);
  }
  if (g.bytes > 0) {
    FUZZ_CHECK(g.dstHandle != 0);
    FUZZ_CHECK(g.hasInline || g.srcHandle != 0);
  }
  checkSignal(w, g);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ncclGinProxyGfd_t gfd{};
  if (size > 0) std::memcpy(gfd.qword, data, std::min(size, sizeof(gfd)));
  const uint64_t* w = gfd.qword;
  GinOp g;
  std::string why;
  // The proxy tells a refusal by a non-empty reason (GinComm::take): an accepted GFD leaves it empty.
  if (!braid::window::decodeGfd(gfd, &g, &why)) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  FUZZ_CHECK(why.empty());
  FUZZ_CHECK(braid::window::gfdWritten(gfd));
  checkCommon(w, g);
  switch (g.kind) {
    case GinOp::Kind::kPut:
      checkPut(w, g);
      break;
    case GinOp::Kind::kVaSignal:
      FUZZ_CHECK(g.signal != GinOp::Signal::kNone && g.bytes == 0);
      FUZZ_CHECK(g.vaOffset == w[ncclGinProxyGfdVASignalOff] >> 1 &&
                 g.vaHandle == w[ncclGinProxyGfdVASignalHandle] >> 1);
      FUZZ_CHECK(!g.hasInline && !g.hasCounter);
      FUZZ_CHECK((field(w[ncclGinProxyGfdHeaderExt], 8, 16) &
                  ~uint64_t{ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithSignalAdd}) == 0);
      checkSignal(w, g);
      break;
    case GinOp::Kind::kGet:
      FUZZ_CHECK(g.srcOffset == w[ncclGinProxyGfdSrcOff] >> 1 && g.srcHandle == w[ncclGinProxyGfdSrcHandle] >> 1);
      FUZZ_CHECK(g.dstOffset == w[ncclGinProxyGfdDstOff] >> 1 && g.dstHandle == w[ncclGinProxyGfdDstHandle] >> 1);
      FUZZ_CHECK(g.signal == GinOp::Signal::kNone && !g.hasInline && !g.hasCounter);
      FUZZ_CHECK(field(w[ncclGinProxyGfdHeaderExt], 8, 16) == ncclGinProxyOpGet);  // no modifier
      if (g.bytes > 0) FUZZ_CHECK(g.srcHandle != 0 && g.dstHandle != 0);
      break;
    case GinOp::Kind::kFlush:
      FUZZ_CHECK(g.signal == GinOp::Signal::kNone && !g.hasInline && !g.hasCounter);
      FUZZ_CHECK(field(w[ncclGinProxyGfdHeaderExt], 8, 16) == ncclGinProxyOpFlush && g.bytes == 0);
      break;
  }
  return 0;
}
