// LL (low-latency) protocol: 16-byte lines {data lo, flag, data hi, flag}, 8 payload bytes per line.
//
// Memory ordering: the sender writes a whole line with one 16-byte volatile store, flags equal to
// (uint32_t)(step + 1). The receiver spins on one 16-byte volatile load of the line until both flags
// match. Each 8-byte {data, flag} half is written and read in one access, so a matching flag proves
// its data arrived (even where a path splits 16-byte stores into 8-byte halves, as PCIe to host
// memory may). No fence and no tail: the flags travel with the data. Stale lines of older steps
// carry other flag values (steps are absolute and a slot is reused every kFifoSlotsLL steps; the
// 32-bit flag wraps only after 2^32 steps of one connection).
//
// Flow control: the receiver returns a slot by storing head = recvStep + 1 after every thread has
// read its lines of the step (named barrier; the loads were performed, since their values were
// stored before it). A sender thread polls head (volatile) only when its cached value says the slot
// may still be in use. Every thread handles lines tid, tid + nthreads, ..., kLLUnroll at a time so
// that several loads are in flight.
#pragma once

#include <cstdint>

#include "device/prims/prims_common.h"
#include "device/reduce/reduce_ops.h"

namespace braid {

constexpr int kLLUnroll = 4;
constexpr int kLLBarrier = 1;

struct LLLines {
  const char* src;
  char* dst;
  const char* in;
  char* out;
  uint32_t inFlag;
  uint32_t outFlag;
  bool srcAligned;
  bool dstAligned;
  bool pre;
  bool post;
};

__device__ __forceinline__ int64_t llChunkBytes(const DevComm& comm, uint32_t requested) {
  return clampChunkBytes(comm.slotBytes[kProtoLL] / 16 * 8, requested);
}

__device__ __forceinline__ int llLineBytes(int64_t nbytes, int64_t l) {
  const int64_t left = nbytes - 8 * l;
  return left < 8 ? static_cast<int>(left) : 8;
}

// Lines base, base + stride, ... (kN of them; those at or past nlines read as 0) of a slot. The
// loads are issued together and only lines whose flags do not match yet are polled again, so the
// kN round trips overlap instead of following each other.
template <int kN>
__device__ __forceinline__ void llRecvLines(AbortWatch& abort, const char* in, uint32_t flag, int64_t base,
                                            int64_t stride, int64_t nlines, uint64_t (&v)[kN]) {
  uint4 raw[kN];
#pragma unroll
  for (int u = 0; u < kN; u++) {
    const int64_t l = base + u * stride;
    raw[u] = l < nlines ? ldVolatile16(in + 16 * l) : uint4{0, flag, 0, flag};
  }
#pragma unroll
  for (int u = 0; u < kN; u++) {
    while (raw[u].y != flag || raw[u].w != flag) {
      if (abort.poll()) {
        raw[u] = uint4{0, flag, 0, flag};
        break;
      }
      raw[u] = ldVolatile16(in + 16 * (base + u * stride));
    }
    v[u] = static_cast<uint64_t>(raw[u].x) | (static_cast<uint64_t>(raw[u].z) << 32);
  }
}

__device__ __forceinline__ void llSendLine(char* p, uint64_t v, uint32_t flag) {
  stVolatile16(p, uint4{static_cast<uint32_t>(v), flag, static_cast<uint32_t>(v >> 32), flag});
}

// Waits until the slot of s.sendStep is free (LL and LL128): head + slots > sendStep.
__device__ __forceinline__ void waitSendCredit(ProtoState& s, int slots) {
  while (s.headCache + slots < s.sendStep + 1) {
    s.headCache = ldVolatile64(s.sendHead);
    if (s.headCache + slots >= s.sendStep + 1 || s.abort.poll()) return;
  }
}

// After a receive step: every thread has read its lines, then thread 0 returns the slot.
__device__ __forceinline__ void postRecvHead(ProtoState& s, int barrier) {
  namedBarrierSync(barrier, s.nthreads);
  if (s.tid == 0 && !s.abort.aborted()) stRelaxedSys(s.recvHead, s.recvStep + 1);
  s.recvStep++;
}

// Lines base, base + nthreads, ... (kLLUnroll of them): user loads first, then the FIFO waits,
// so that all loads of the group are in flight together.
template <typename T, typename Fn>
__device__ __forceinline__ void llLines(ProtoState& s, const Fn& fn, const LLLines& L, int64_t base, int64_t nbytes,
                                        int64_t nlines) {
  uint64_t sv[kLLUnroll];
  uint64_t v[kLLUnroll];
#pragma unroll
  for (int u = 0; u < kLLUnroll; u++) {
    const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
    sv[u] = 0;
    if (L.src != nullptr && l < nlines) sv[u] = loadPack8<T>(L.src + 8 * l, llLineBytes(nbytes, l), L.srcAligned);
  }
  if (L.in != nullptr) {
    llRecvLines(s.abort, L.in, L.inFlag, base, s.nthreads, nlines, v);
  } else {
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) v[u] = 0;
  }
#pragma unroll
  for (int u = 0; u < kLLUnroll; u++) {
    const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
    if (l >= nlines) break;
    if (L.src != nullptr) {
      if (Fn::kHasPreOp && L.pre) sv[u] = applyPreOp<Fn, T, uint64_t>(fn, sv[u]);
      v[u] = L.in != nullptr ? applyReduce<Fn, T, uint64_t>(fn, v[u], sv[u]) : sv[u];
    }
    if (Fn::kHasPostOp && L.post) v[u] = applyPostOp<Fn, T, uint64_t>(fn, v[u]);
    if (L.out != nullptr) llSendLine(L.out + 16 * l, v[u], L.outFlag);
    if (L.dst != nullptr) storePack8<T>(L.dst + 8 * l, v[u], llLineBytes(nbytes, l), L.dstAligned);
  }
}

// NET (sendSizes set): the proxy ships an LL step once its size word says LL and every line of
// the slot carries the step's flag (proxy.h), so thread 0 stores the size, marked as LL, as soon as
// the slot is free and before any line: the flags publish the lines, and the step costs no barrier,
// system-scope fence or tail store. The proxy clears the word before it returns the slot (head).
__device__ __forceinline__ void storeNetLlSize(uint32_t* sizes, uint64_t step, int64_t nlines) {
  *reinterpret_cast<volatile uint32_t*>(&sizes[step % kNetSizeSlots]) = static_cast<uint32_t>(nlines * 16) | kNetSizeLL;
}
__device__ __forceinline__ void llAnnounceNetStep(ProtoState& s, int64_t nlines) {
  if (s.tid != 0 || s.abort.aborted()) return;
  storeNetLlSize(s.sendSizes, s.sendStep, nlines);
}

// One LL step: LLSteps::run<T, Fn> where it is compiled into the ring's code (InlinePrims, in the
// kernels of the pairs of inlinedPairOf), llStep<T, Fn> where it is called through a StepFn.
struct LLSteps {
  template <typename T, typename Fn>
  static __device__ __forceinline__ void run(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags);
};

template <typename T, typename Fn>
__device__ __forceinline__ void LLSteps::run(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags) {
  if (nelem <= 0) return;
  const bool recv = (flags & kStepRecv) != 0;
  const bool send = (flags & kStepSend) != 0;
  const int64_t nbytes = nelem * static_cast<int64_t>(sizeof(T));
  const int64_t nlines = divUp(nbytes, 8);
  if (send && s.tid < nlines) waitSendCredit(s, kFifoSlotsLL);
  if (send && s.sendSizes != nullptr) llAnnounceNetStep(s, nlines);
  LLLines lines;
  lines.src = src;
  lines.dst = dst;
  lines.srcAligned = aligned8(src);
  lines.dstAligned = aligned8(dst);
  lines.in = recv ? s.recvBuff + (s.recvStep % kFifoSlotsLL) * s.slotBytes : nullptr;
  lines.out = send ? s.sendBuff + (s.sendStep % kFifoSlotsLL) * s.slotBytes : nullptr;
  lines.inFlag = static_cast<uint32_t>(s.recvStep + 1);
  lines.outFlag = static_cast<uint32_t>(s.sendStep + 1);
  lines.pre = (flags & kStepPreOp) != 0;
  lines.post = (flags & kStepPostOp) != 0;
  const Fn fn(s.scalar);
  for (int64_t base = s.tid; base < nlines; base += static_cast<int64_t>(kLLUnroll) * s.nthreads) {
    llLines<T, Fn>(s, fn, lines, base, nbytes, nlines);
  }
  if (send) s.sendStep++;
  if (recv) postRecvHead(s, kLLBarrier);
}

// Not inlined: one copy per (T, Fn), its state in memory.
template <typename T, typename Fn>
__device__ __noinline__ void llStep(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags) {
  LLSteps::run<T, Fn>(s, src, dst, nelem, flags);
}

}  // namespace braid
