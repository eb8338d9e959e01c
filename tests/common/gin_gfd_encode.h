// A GFD packed the way device code packs one (nccl_device/gin_proxy.h's word table), written from
// that table and not from the library's decoder, for the tests and the fuzz corpus of
// window/gin_gfd.h.
#pragma once

#include <nccl_device/gin_proxy.h>

#include <cstdint>

namespace braid::testing {

// The fields of one GFD, as device code has them before it packs them.
struct GfdFields {
  uint32_t op = 0;
  uint64_t bytes = 0;
  uint64_t srcOffset = 0, srcHandle = 0;  // or the VA signal's word (offset, window)
  bool hasInline = false;
  uint64_t inlineValue = 0;
  uint64_t dstOffset = 0, dstHandle = 0;
  uint32_t counterId = 0, signalId = 0;
  uint64_t signalValue = 0;
  bool strong = false;
};

// Packs `f`, setting every word's written flag (bit 0).
inline ncclGinProxyGfd_t encodeGfd(const GfdFields& f) {
  ncclGinProxyGfd_t g{};
  uint64_t* w = g.qword;
  w[ncclGinProxyGfdHeader] = uint64_t{NCCL_GIN_PROXY_GFD_VERSION} << 1 | f.bytes << 7;
  if (f.hasInline) {
    w[ncclGinProxyGfdInlineLow] = (f.inlineValue & 0xffffffffffffull) << 8;  // value bits 0-47 at 8-55
    w[ncclGinProxyGfdInlineHigh] = (f.inlineValue >> 48) << 8;               // value bits 48-63 at 8-23
  } else {
    w[ncclGinProxyGfdSrcOff] = f.srcOffset << 1;
    w[ncclGinProxyGfdSrcHandle] = f.srcHandle << 1;
  }
  w[ncclGinProxyGfdDstOff] = f.dstOffset << 1;
  w[ncclGinProxyGfdDstHandle] = f.dstHandle << 1;
  w[ncclGinProxyGfdCompletion] =
      uint64_t{f.counterId} << 1 | uint64_t{f.signalId} << 24 | (f.signalValue & 0xffff) << 48;
  w[ncclGinProxyGfdSignalVal] =
      uint64_t{f.strong} << 1 | (f.signalValue >> 16 & 0xffff) << 8 | (f.signalValue >> 32) << 24;
  w[ncclGinProxyGfdHeaderExt] = uint64_t{f.op} << 8;
  for (uint64_t& word : g.qword) word |= 1;
  return g;
}

}  // namespace braid::testing
