#include "window/gin_gfd.h"

#include <cstdio>

namespace braid::window {
namespace {

// An op as the reasons name it: hexadecimal, like ncclGinProxyOp_t's bits.
std::string hexOp(uint32_t op) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%x", op);
  return text;
}

uint64_t bits(uint64_t word, int first, int count) {
  return (word >> first) & (count == 64 ? ~uint64_t{0} : (uint64_t{1} << count) - 1);
}
// The 63-bit value above the flag (offsets and window handles).
uint64_t above(uint64_t word) { return word >> 1; }

constexpr uint32_t kKnownOps = ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithCounter |
                               ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithSignalAdd | ncclGinProxyOpVASignal |
                               ncclGinProxyOpGet | ncclGinProxyOpFlush;

bool readSignal(const uint64_t* w, uint32_t op, GinOp* out, std::string* why) {
  const bool inc = (op & ncclGinProxyOpWithSignalInc) != 0;
  const bool add = (op & ncclGinProxyOpWithSignalAdd) != 0;
  if (inc && add) {
    *why = "it both increments and adds to a signal";
    return false;
  }
  out->signal = inc ? GinOp::Signal::kInc : add ? GinOp::Signal::kAdd : GinOp::Signal::kNone;
  const uint64_t completion = w[ncclGinProxyGfdCompletion];
  const uint64_t sv = w[ncclGinProxyGfdSignalVal];
  out->signalValue = bits(completion, 48, 16) | bits(sv, 8, 16) << 16 | bits(sv, 24, 32) << 32;
  out->signalId = static_cast<uint32_t>(bits(completion, 24, 24));
  out->strong = bits(sv, 1, 1) != 0;
  return true;
}

}  // namespace

bool gfdWritten(const ncclGinProxyGfd_t& gfd) {
  for (uint64_t w : gfd.qword) {
    if ((w & 1) == 0) return false;
  }
  return true;
}

bool decodeGfd(const ncclGinProxyGfd_t& gfd, GinOp* out, std::string* why) {
  const uint64_t* w = gfd.qword;
  if (!gfdWritten(gfd)) {
    *why = "not completely written";
    return false;
  }
  if (bits(w[ncclGinProxyGfdHeader], 1, 4) != NCCL_GIN_PROXY_GFD_VERSION) {
    *why = "GFD version " + std::to_string(bits(w[ncclGinProxyGfdHeader], 1, 4)) + ", not " +
           std::to_string(NCCL_GIN_PROXY_GFD_VERSION);
    return false;
  }
  const uint32_t op = static_cast<uint32_t>(bits(w[ncclGinProxyGfdHeaderExt], 8, 16));
  if ((op & ~kKnownOps) != 0) {
    *why = "unknown op bits in " + hexOp(op);
    return false;
  }
  GinOp g;
  g.bytes = bits(w[ncclGinProxyGfdHeader], 7, 57);
  const bool put = (op & ncclGinProxyOpPut) != 0;
  const bool va = (op & ncclGinProxyOpVASignal) != 0;
  const bool get = (op & ncclGinProxyOpGet) != 0;
  const bool flush = (op & ncclGinProxyOpFlush) != 0;
  if (int(put) + int(va) + int(get) + int(flush) != 1) {
    *why = "op " + hexOp(op) + " is not exactly one of put, VA signal, get and flush";
    return false;
  }
  // Gets and flushes carry no modifier, a VA signal only its signal op (what device code writes).
  const uint32_t vaOps = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalInc | ncclGinProxyOpWithSignalAdd;
  if ((get && op != ncclGinProxyOpGet) || (flush && (op != ncclGinProxyOpFlush || g.bytes != 0)) ||
      (va && (op & ~vaOps) != 0)) {
    *why = "op " + hexOp(op) + " with a modifier its kind does not take, or a flush with data";
    return false;
  }
  if (flush) {
    g.kind = GinOp::Kind::kFlush;
    *out = g;
    return true;
  }
  g.dstOffset = above(w[ncclGinProxyGfdDstOff]);
  g.dstHandle = above(w[ncclGinProxyGfdDstHandle]);
  if (get) {
    g.kind = GinOp::Kind::kGet;
    g.srcOffset = above(w[ncclGinProxyGfdSrcOff]);
    g.srcHandle = above(w[ncclGinProxyGfdSrcHandle]);
    if (g.bytes > 0 && (g.srcHandle == 0 || g.dstHandle == 0)) {
      *why = "a get of data without a source or destination window";
      return false;
    }
    *out = g;
    return true;
  }
  if (!readSignal(w, op, &g, why)) return false;
  if (va) {
    g.kind = GinOp::Kind::kVaSignal;
    g.vaOffset = above(w[ncclGinProxyGfdVASignalOff]);
    g.vaHandle = above(w[ncclGinProxyGfdVASignalHandle]);
    if (g.signal == GinOp::Signal::kNone || g.bytes != 0) {
      *why = "a VA signal without a signal op, or with data";
      return false;
    }
    *out = g;
    return true;
  }
  g.kind = GinOp::Kind::kPut;
  g.hasCounter = (op & ncclGinProxyOpWithCounter) != 0;
  g.counterId = static_cast<uint32_t>(bits(w[ncclGinProxyGfdCompletion], 1, 23));
  g.hasInline = (op & ncclGinProxyOpWithInline) != 0;
  if (g.hasInline) {
    if (g.bytes > 8) {
      *why = "an inline value of " + std::to_string(g.bytes) + " bytes (at most 8)";
      return false;
    }
    g.inlineValue = bits(w[ncclGinProxyGfdInlineLow], 8, 48) | bits(w[ncclGinProxyGfdInlineHigh], 8, 16) << 48;
  } else {
    g.srcOffset = above(w[ncclGinProxyGfdSrcOff]);
    g.srcHandle = above(w[ncclGinProxyGfdSrcHandle]);
  }
  if (g.bytes > 0 && g.dstHandle == 0) {
    *why = "data without a destination window";
    return false;
  }
  if (g.bytes > 0 && !g.hasInline && g.srcHandle == 0) {
    *why = "data without a source window";
    return false;
  }
  *out = g;
  return true;
}

}  // namespace braid::window
