/*
 * nccl_device/gin_proxy_device.h -- the device half of the proxy GIN transport: encoding GIN
 * operations as descriptors (GFDs) and handing them to the library's host thread through the
 * per-peer rings of an ncclGinProxyGpuCtx_t. nccl_device/gin_proxy.h states the protocol and the
 * layouts; ncclGin (nccl_device/gin.h) is built on the helpers here. Device code only.
 *
 * A GFD is built in registers as 16 words, each carrying the written flag, so that the host can
 * tell a slot is complete from the flags alone: the eight 16-byte stores that write it may reach
 * host memory in any order. Words and fields a GFD does not use are zero.
 *
 * Ordering: the rings, pis and cis are shared with a host thread, so every access to them is at
 * system scope. A put's source data must be visible to that thread before it reads the GFD; a
 * system-scope release fence before posting gives that unless the caller says it has released at
 * system scope already (givenRelease). A consumer index is raised by the host only once the GFD's
 * source has been read and its message sent, so ci >= idx + 1 makes the source reusable.
 *
 * Waits give up when the communicator's abort flag is set (polled every
 * nccl::utility::kAbortPollSpins spins): untimed waits return, timed ones return ncclTimeout.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_GIN_PROXY_DEVICE_H_
#define NCCL_DEVICE_GIN_PROXY_DEVICE_H_

#include "core.h"
#include "gin_proxy.h"

#ifdef __CUDACC__
namespace nccl {
namespace detail {
namespace ginproxy {

/* The ncclNetDeviceType value of the proxy transport (NCCL_NET_DEVICE_GIN_PROXY). */
constexpr int kBackend = 2;
/* A put or get larger than this travels as several GFDs of at most this size. */
constexpr size_t kChunkBytes = size_t(1) << 30;

constexpr uint64_t kFlag = 1;
constexpr uint64_t kSizeMask = (uint64_t(1) << 57) - 1;

/* What a put raises at the target once it lands. */
enum SignalKind : uint8_t { kSignalNone = 0, kSignalIndexed = 1, kSignalVa = 2 };
struct Signal {
  uint8_t kind;
  bool strong; /* also settles the context's earlier puts to that peer */
  bool add;    /* SignalAdd by `value`; otherwise SignalInc (value 1) */
  uint32_t id; /* an indexed signal */
  uint64_t value;
  uint64_t vaHandle; /* a VA signal: the window's GIN handle and the GIN offset of the word */
  uint64_t vaOffset;
};

/* ncclGinRequest_t as this transport fills it: the ring and slot a wait must see done, and the
 * peer's latest get when the request was made. */
struct Request {
  int peer;
  uint32_t nextGfdIdx;
  uint32_t lastIssuedGet;
};
static_assert(sizeof(Request) <= sizeof(ncclGinRequest_t), "a proxy request fits in ncclGinRequest_t");

struct Gfd {
  uint64_t w[ncclGinProxyGfdQwords];
};

NCCL_DEVICE_INLINE ncclGinProxyGpuCtx_t* context(void* handle, uint32_t contextId) {
  return static_cast<ncclGinProxyGpuCtx_t*>(handle) + contextId;
}

/* ---- Encoding (see the word layout in nccl_device/gin_proxy.h) ---- */

/* A field that fills bits 1-63 of its word. */
NCCL_DEVICE_INLINE uint64_t wide(uint64_t v) { return kFlag | (v << 1); }

/* A GFD of `op` moving `size` bytes, every other field zero. */
NCCL_DEVICE_INLINE Gfd gfdOf(uint32_t op, uint64_t size) {
  Gfd g;
  NVCC_PRAGMA_UNROLL_AUTO
  for (int i = 0; i < ncclGinProxyGfdQwords; i++) g.w[i] = kFlag;
  g.w[ncclGinProxyGfdHeader] = kFlag | (uint64_t(NCCL_GIN_PROXY_GFD_VERSION & 0xf) << 1) | ((size & kSizeMask) << 7);
  g.w[ncclGinProxyGfdHeaderExt] = kFlag | (uint64_t(op & 0xffff) << 8);
  return g;
}
NCCL_DEVICE_INLINE void setSource(Gfd& g, uint64_t handle, uint64_t offset) {
  g.w[ncclGinProxyGfdSrcOff] = wide(offset);
  g.w[ncclGinProxyGfdSrcHandle] = wide(handle);
}
NCCL_DEVICE_INLINE void setDestination(Gfd& g, uint64_t handle, uint64_t offset) {
  g.w[ncclGinProxyGfdDstOff] = wide(offset);
  g.w[ncclGinProxyGfdDstHandle] = wide(handle);
}
/* Value bits 0-47 at bits 8-55 of word 1, bits 48-63 at bits 8-23 of word 2. */
NCCL_DEVICE_INLINE void setInline(Gfd& g, uint64_t bits) {
  g.w[ncclGinProxyGfdInlineLow] = kFlag | ((bits & 0xffffffffffffull) << 8);
  g.w[ncclGinProxyGfdInlineHigh] = kFlag | ((bits >> 48) << 8);
}
/* Counter id (23 bits), signal id (24 bits), the signal value split over words 5 and 6, strong. */
NCCL_DEVICE_INLINE void setCompletion(Gfd& g, uint32_t counterId, uint32_t signalId, uint64_t value, bool strong) {
  g.w[ncclGinProxyGfdCompletion] =
      kFlag | (uint64_t(counterId & 0x7fffff) << 1) | (uint64_t(signalId & 0xffffff) << 24) | ((value & 0xffff) << 48);
  g.w[ncclGinProxyGfdSignalVal] =
      kFlag | (uint64_t(strong ? 1 : 0) << 1) | (((value >> 16) & 0xffff) << 8) | ((value >> 32) << 24);
}

/* ---- Rings ---- */

/* Claims the next slot of `peer`'s ring, waits until the host has consumed the GFD that last held
 * it, and writes `g` there. A get also moves the peer's lastIssuedGet to this slot + 1 (a rolling
 * maximum: concurrent posters may finish out of order). */
NCCL_DEVICE_INLINE void post(ncclGinProxyGpuCtx_t* ctx, int peer, Gfd const& g, bool isGet, uint32_t* abortFlag) {
  using nccl::utility::loadConst;
  uint32_t queueSize = loadConst(&ctx->queueSize);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> pi(loadConst(&ctx->pis)[peer]);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ci(loadConst(&ctx->cis)[peer]);
  uint32_t idx = pi.fetch_add(1, cuda::memory_order_relaxed);
  uint32_t spins = 0;
  NVCC_PRAGMA_UNROLL_DISABLED
  while (queueSize <= idx - ci.load(cuda::memory_order_relaxed)) {
    if (nccl::utility::testAbort(abortFlag, spins)) return;
  }
  uint4* slot = reinterpret_cast<uint4*>(loadConst(&ctx->queues) + size_t(peer) * queueSize + (idx & (queueSize - 1)));
  NVCC_PRAGMA_UNROLL_AUTO
  for (int i = 0; i < ncclGinProxyGfdQwords / 2; i++) {
    uint64_t a = g.w[2 * i], b = g.w[2 * i + 1];
    __stwt(slot + i, make_uint4(uint32_t(a), uint32_t(a >> 32), uint32_t(b), uint32_t(b >> 32)));
  }
  if (isGet) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> last(loadConst(&ctx->lastIssuedGet)[peer]);
    uint32_t seen = last.load(cuda::memory_order_relaxed);
    while (nccl::utility::rollingLessThan<uint32_t>(seen, idx + 1) &&
           !last.compare_exchange_weak(seen, idx + 1, cuda::memory_order_release, cuda::memory_order_relaxed)) {
    }
  }
}

/* Spins until `peer`'s ring has consumed every GFD before slot `idx` (rolling compare: both
 * indices wrap). */
template <bool kTimed>
NCCL_DEVICE_INLINE ncclResult_t waitConsumed(ncclGinProxyGpuCtx_t* ctx, int peer, uint32_t idx, cuda::memory_order ord,
                                             uint32_t* abortFlag, uint64_t startCycle, uint64_t timeoutCycles) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ci(nccl::utility::loadConst(&ctx->cis)[peer]);
  cuda::memory_order acquire = nccl::utility::acquireOrderOf(ord);
  uint32_t spins = 0;
  NVCC_PRAGMA_UNROLL_DISABLED
  while (!nccl::utility::rollingLessEq<uint32_t>(idx, ci.load(acquire))) {
    if (kTimed && uint64_t(clock64()) - startCycle >= timeoutCycles) return ncclTimeout;
    if (nccl::utility::testAbort(abortFlag, spins)) return kTimed ? ncclTimeout : ncclSuccess;
  }
  return ncclSuccess;
}

/* Waits until `peer`'s ring is empty of what was posted to it before the call. */
template <bool kTimed>
NCCL_DEVICE_INLINE ncclResult_t drain(ncclGinProxyGpuCtx_t* ctx, int peer, cuda::memory_order ord, uint32_t* abortFlag,
                                      uint64_t startCycle, uint64_t timeoutCycles) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> pi(nccl::utility::loadConst(&ctx->pis)[peer]);
  uint32_t end = pi.load(cuda::memory_order_relaxed);
  return waitConsumed<kTimed>(ctx, peer, end, ord, abortFlag, startCycle, timeoutCycles);
}

/* A request covering what is posted to `peer` so far. lastIssuedGet is read first: a get posted
 * concurrently then either lies before the ring position read next or is not covered at all. */
NCCL_DEVICE_INLINE Request requestFor(ncclGinProxyGpuCtx_t* ctx, int peer) {
  using nccl::utility::loadConst;
  Request req;
  req.peer = peer;
  req.lastIssuedGet = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(loadConst(&ctx->lastIssuedGet)[peer])
                          .load(cuda::memory_order_acquire);
  req.nextGfdIdx = cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(loadConst(&ctx->pis)[peer])
                       .load(cuda::memory_order_relaxed);
  return req;
}

/* Completes a request: its GFDs consumed, and, where a get to the peer is not yet known to have
 * landed, a Flush GFD through the caller's own ring (selfRank, a GIN rank) waited for: the host
 * completes it once every earlier get has landed. */
template <bool kTimed>
NCCL_DEVICE_INLINE ncclResult_t complete(ncclGinProxyGpuCtx_t* ctx, int selfRank, Request const& req,
                                         cuda::memory_order ord, uint32_t* abortFlag, uint64_t timeoutCycles) {
  uint64_t start = kTimed ? uint64_t(clock64()) : 0;
  ncclResult_t ret =
      waitConsumed<kTimed>(ctx, req.peer, req.nextGfdIdx, cuda::memory_order_relaxed, abortFlag, start, timeoutCycles);
  if (ret != ncclSuccess) return ret;
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device> visible(
      nccl::utility::loadConst(&ctx->lastVisibleGet)[req.peer]);
  if (!nccl::utility::rollingLessThan<uint32_t>(visible.load(cuda::memory_order_relaxed), req.lastIssuedGet)) {
    return ncclSuccess;
  }
  post(ctx, selfRank, gfdOf(ncclGinProxyOpFlush, 0), false, abortFlag);
  ret = drain<kTimed>(ctx, selfRank, ord, abortFlag, start, timeoutCycles);
  if (ret != ncclSuccess) return ret;
  /* Concurrent completions may move it backwards; that only costs a later redundant flush. */
  visible.store(req.lastIssuedGet, cuda::memory_order_relaxed);
  return ncclSuccess;
}

/* ---- Operations ---- */

/* What a put moves: from a window range, or a value of at most 8 bytes carried in the GFD. */
struct Payload {
  uint64_t dstHandle, dstOffset;
  uint64_t srcHandle, srcOffset;
  size_t bytes;
  bool hasInline;
  uint64_t inlineBits;
  bool hasCounter; /* raise counterId on this rank once the source has been read */
  uint32_t counterId;
};

NCCL_DEVICE_INLINE uint32_t signalOpBits(Signal const& s) {
  return s.add ? uint32_t(ncclGinProxyOpWithSignalAdd) : uint32_t(ncclGinProxyOpWithSignalInc);
}

/* A put, as one thread issues it. Above kChunkBytes, leading chunks go alone; the last GFD
 * carries the counter and an indexed signal. A VA signal follows in a GFD of its own, posted to
 * the same ring, so the host raises it after the data has landed. A GFD with nothing to do (no
 * source, value, counter or indexed signal: a signal() that only raises a VA signal) is skipped. */
NCCL_DEVICE_INLINE void put(ncclGinProxyGpuCtx_t* ctx, int peer, Payload p, Signal const& s,
                            cuda::thread_scope givenRelease, uint32_t* abortFlag) {
  if (givenRelease != cuda::thread_scope_system) {
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
  }
  NVCC_PRAGMA_UNROLL_DISABLED
  while (p.bytes > kChunkBytes) {
    Gfd g = gfdOf(ncclGinProxyOpPut, kChunkBytes);
    setSource(g, p.srcHandle, p.srcOffset);
    setDestination(g, p.dstHandle, p.dstOffset);
    post(ctx, peer, g, false, abortFlag);
    p.bytes -= kChunkBytes;
    p.srcOffset += kChunkBytes;
    p.dstOffset += kChunkBytes;
  }
  bool indexed = s.kind == kSignalIndexed;
  if (p.hasInline || p.hasCounter || p.srcHandle != 0 || indexed) {
    uint32_t op = ncclGinProxyOpPut | (p.hasInline ? uint32_t(ncclGinProxyOpWithInline) : 0u) |
                  (p.hasCounter ? uint32_t(ncclGinProxyOpWithCounter) : 0u) | (indexed ? signalOpBits(s) : 0u);
    Gfd g = gfdOf(op, p.bytes);
    if (p.hasInline) {
      setInline(g, p.inlineBits);
    } else {
      setSource(g, p.srcHandle, p.srcOffset);
    }
    setDestination(g, p.dstHandle, p.dstOffset);
    setCompletion(g, p.hasCounter ? p.counterId : 0, indexed ? s.id : 0, indexed ? s.value : 0, s.strong);
    post(ctx, peer, g, false, abortFlag);
  }
  if (s.kind == kSignalVa) {
    Gfd g = gfdOf(ncclGinProxyOpVASignal | signalOpBits(s), 0);
    g.w[ncclGinProxyGfdVASignalOff] = wide(s.vaOffset);
    g.w[ncclGinProxyGfdVASignalHandle] = wide(s.vaHandle);
    setCompletion(g, 0, 0, s.value, s.strong);
    post(ctx, peer, g, false, abortFlag);
  }
}

/* A get of `bytes` from the peer's (remoteHandle, remoteOffset) into this rank's (localHandle,
 * localOffset), in GFDs of at most kChunkBytes; nothing for 0 bytes. */
NCCL_DEVICE_INLINE void get(ncclGinProxyGpuCtx_t* ctx, int peer, uint64_t remoteHandle, uint64_t remoteOffset,
                            uint64_t localHandle, uint64_t localOffset, size_t bytes, uint32_t* abortFlag) {
  NVCC_PRAGMA_UNROLL_DISABLED
  while (bytes > 0) {
    size_t n = bytes < kChunkBytes ? bytes : kChunkBytes;
    Gfd g = gfdOf(ncclGinProxyOpGet, n);
    setSource(g, remoteHandle, remoteOffset);
    setDestination(g, localHandle, localOffset);
    post(ctx, peer, g, true, abortFlag);
    bytes -= n;
    remoteOffset += n;
    localOffset += n;
  }
}

}  // namespace ginproxy
}  // namespace detail
}  // namespace nccl
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_GIN_PROXY_DEVICE_H_ */
