// LL128 protocol: 128-byte lines of 16 64-bit words, words 0..14 payload and word 15 the flag
// (step + 1), so 120 payload bytes per line. Payload byte b of a step is in line b / 120.
//
// Memory ordering: lane j (0..7) of an 8-lane group owns words 2j and 2j+1 of a line; the group
// writes the line with one warp-wide 16-byte volatile store per lane, which NVLink delivers as one
// 128-byte write; the receiving group reads it with one 16-byte volatile load per lane and the warp
// reloads until no lane 7 sees a stale flag (__any_sync). This relies on 128-byte stores arriving
// whole, which is why LL128 is only selected on NVLink paths. No fence, no tail.
//
// Flow control as in LL: head = recvStep + 1 after every thread read its lines (named barrier), and
// sender threads poll head only when their cached value says the slot may still be in use. Loops
// over lines are warp-uniform (every lane runs the same trip count) so __any_sync sees all lanes.
// A group handles kLL128Unroll lines at once so that several loads are in flight.
#pragma once

#include <cstdint>

#include "device/prims/prims_common.h"
#include "device/prims/prims_ll.h"
#include "device/reduce/reduce_ops.h"

namespace braid {

constexpr int kLL128Unroll = 4;
constexpr int kLL128Barrier = 1;
constexpr int kLL128LineBytes = 128;
constexpr int kLL128LinePayload = 120;

struct LL128Lines {
  const char* src;
  char* dst;
  const char* in;
  char* out;
  uint64_t inFlag;
  uint64_t outFlag;
  bool srcAligned;
  bool dstAligned;
  bool pre;
  bool post;
};

__device__ __forceinline__ int64_t ll128ChunkBytes(const DevComm& comm, uint32_t requested) {
  return clampChunkBytes(comm.slotBytes[kProtoLL128] / kLL128LineBytes * kLL128LinePayload, requested);
}

// Payload bytes lane j carries in line l: 16 (lane 7: 8), fewer in the last line.
__device__ __forceinline__ int ll128LaneBytes(int64_t nbytes, int64_t l, int j) {
  const int64_t left = nbytes - (l * kLL128LinePayload + 16 * j);
  const int cap = j == 7 ? 8 : 16;
  return left <= 0 ? 0 : (left < cap ? static_cast<int>(left) : cap);
}

// Loads this lane's words of its kLL128Unroll lines until no lane of the warp sees a stale flag.
__device__ __forceinline__ void ll128RecvLines(ProtoState& s, const LL128Lines& L, int64_t base, int ngroups,
                                               int64_t nlines, uint64_t (&v)[kLL128Unroll][2]) {
  const int j = s.tid % 8;
  const int group = s.tid / 8;
  while (true) {
    bool stale = false;
#pragma unroll
    for (int u = 0; u < kLL128Unroll; u++) {
      const int64_t l = base + static_cast<int64_t>(u) * ngroups + group;
      if (l < nlines) {
        ldVolatile16(L.in + l * kLL128LineBytes + 16 * j, v[u][0], v[u][1]);
        stale |= j == 7 && v[u][1] != L.inFlag;
      }
    }
    if (!__any_sync(0xffffffffu, stale)) return;
    const bool aborted = s.tid % 32 == 0 && s.abort.poll();
    if (__any_sync(0xffffffffu, aborted)) return;
  }
}

template <typename T, typename Fn>
__device__ __forceinline__ void ll128Lines(ProtoState& s, const Fn& fn, const LL128Lines& L, int64_t base, int ngroups,
                                           int64_t nbytes, int64_t nlines) {
  const int j = s.tid % 8;
  const int group = s.tid / 8;
  uint64_t sv[kLL128Unroll][2];
  uint64_t v[kLL128Unroll][2];
#pragma unroll
  for (int u = 0; u < kLL128Unroll; u++) {
    const int64_t l = base + static_cast<int64_t>(u) * ngroups + group;
    const int nb = l < nlines ? ll128LaneBytes(nbytes, l, j) : 0;
    sv[u][0] = 0;
    sv[u][1] = 0;
    if (L.src != nullptr && nb > 0) {
      const char* p = L.src + l * kLL128LinePayload + 16 * j;
      sv[u][0] = loadPack8<T>(p, nb < 8 ? nb : 8, L.srcAligned);
      if (nb > 8) sv[u][1] = loadPack8<T>(p + 8, nb - 8, L.srcAligned);
    }
    v[u][0] = 0;
    v[u][1] = 0;
  }
  if (L.in != nullptr) ll128RecvLines(s, L, base, ngroups, nlines, v);
#pragma unroll
  for (int u = 0; u < kLL128Unroll; u++) {
    const int64_t l = base + static_cast<int64_t>(u) * ngroups + group;
    if (l >= nlines) continue;
#pragma unroll
    for (int w = 0; w < 2; w++) {
      if (L.src != nullptr) {
        if (Fn::kHasPreOp && L.pre) sv[u][w] = applyPreOp<Fn, T, uint64_t>(fn, sv[u][w]);
        v[u][w] = L.in != nullptr ? applyReduce<Fn, T, uint64_t>(fn, v[u][w], sv[u][w]) : sv[u][w];
      }
      if (Fn::kHasPostOp && L.post) v[u][w] = applyPostOp<Fn, T, uint64_t>(fn, v[u][w]);
    }
    if (L.out != nullptr) stVolatile16(L.out + l * kLL128LineBytes + 16 * j, v[u][0], j == 7 ? L.outFlag : v[u][1]);
    const int nb = ll128LaneBytes(nbytes, l, j);
    if (L.dst != nullptr && nb > 0) {
      char* d = L.dst + l * kLL128LinePayload + 16 * j;
      storePack8<T>(d, v[u][0], nb < 8 ? nb : 8, L.dstAligned);
      if (nb > 8) storePack8<T>(d + 8, v[u][1], nb - 8, L.dstAligned);
    }
  }
}

// One LL128 step: LL128Steps::run<T, Fn> where it is compiled into the ring's code (InlinePrims, in
// the kernels of the pairs of inlinedPairOf), ll128Step<T, Fn> where it is called through a StepFn.
struct LL128Steps {
  template <typename T, typename Fn>
  static __device__ __forceinline__ void run(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags);
};

template <typename T, typename Fn>
__device__ __forceinline__ void LL128Steps::run(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags) {
  if (nelem <= 0) return;
  const bool recv = (flags & kStepRecv) != 0;
  const bool send = (flags & kStepSend) != 0;
  const int64_t nbytes = nelem * static_cast<int64_t>(sizeof(T));
  const int64_t nlines = divUp(nbytes, kLL128LinePayload);
  const int ngroups = s.nthreads / 8;
  if (send && s.tid / 8 < nlines) waitSendCredit(s, kFifoSlotsLL128);
  LL128Lines lines;
  lines.src = src;
  lines.dst = dst;
  lines.srcAligned = aligned8(src);
  lines.dstAligned = aligned8(dst);
  lines.in = recv ? s.recvBuff + (s.recvStep % kFifoSlotsLL128) * s.slotBytes : nullptr;
  lines.out = send ? s.sendBuff + (s.sendStep % kFifoSlotsLL128) * s.slotBytes : nullptr;
  lines.inFlag = s.recvStep + 1;
  lines.outFlag = s.sendStep + 1;
  lines.pre = (flags & kStepPreOp) != 0;
  lines.post = (flags & kStepPostOp) != 0;
  const Fn fn(s.scalar);
  // Warp-uniform: base depends only on the loop, not on the lane.
  for (int64_t base = 0; base < nlines; base += static_cast<int64_t>(kLL128Unroll) * ngroups) {
    ll128Lines<T, Fn>(s, fn, lines, base, ngroups, nbytes, nlines);
  }
  if (send) s.sendStep++;
  if (recv) postRecvHead(s, kLL128Barrier);
}

// Not inlined: one copy per (T, Fn), its state in memory.
template <typename T, typename Fn>
__device__ __noinline__ void ll128Step(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags) {
  LL128Steps::run<T, Fn>(s, src, dst, nelem, flags);
}

}  // namespace braid
