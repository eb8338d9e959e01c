// The descriptors (GFDs) device code posts to the proxy GIN transport, read on the host: which
// words hold what is nccl_device/gin_proxy.h's to say; this decodes and checks one. The host
// trusts nothing in a GFD (a kernel's bug or a stray store can write any bytes there): an unknown
// op, a missing flag or a wrong version is refused with a reason. Pure (no CUDA), so a fuzzer
// runs it (tests/fuzz/gin_gfd_fuzz.cc).
#pragma once

#include <nccl_device/gin_proxy.h>

#include <cstdint>
#include <string>

namespace braid::window {

// What one GFD asks for.
struct GinOp {
  enum class Kind { kPut, kVaSignal, kGet, kFlush } kind = Kind::kPut;
  uint64_t bytes = 0;
  uint64_t srcHandle = 0, srcOffset = 0;  // put: the local source (handle 0: none); get: the remote source
  uint64_t dstHandle = 0, dstOffset = 0;  // put: the peer's destination; get: the local destination
  bool hasInline = false;                 // put: the payload is `inlineValue`'s low `bytes` bytes
  uint64_t inlineValue = 0;
  bool hasCounter = false;
  uint32_t counterId = 0;
  enum class Signal { kNone, kInc, kAdd } signal = Signal::kNone;
  uint32_t signalId = 0;                // an indexed signal (put)
  uint64_t signalValue = 0;             // what Add adds (Inc adds 1)
  uint64_t vaHandle = 0, vaOffset = 0;  // a VA signal's window word (kVaSignal)
  bool strong = false;
};

// Whether every word of `gfd` carries its written flag: the device has finished writing it.
bool gfdWritten(const ncclGinProxyGfd_t& gfd);

// Decodes a written GFD. False, with *why for the WARN, for what no device code writes.
bool decodeGfd(const ncclGinProxyGfd_t& gfd, GinOp* out, std::string* why);

}  // namespace braid::window
