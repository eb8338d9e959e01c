// Ring algorithms of the five collectives, written once against the protocol interface of
// prims/prims_common.h: Prims::step moves one ring step through the protocol's step function for the
// work's (T, Fn), so this code is compiled once per protocol kernel, not once per type and op; and
// InlinePrims has one pair's step compiled in, for the kernels of the common pairs (kernels.h,
// inlinedPairOf).
//
// Contract:
//   - A CTA runs one channel's ring on its part [begin, end) of the element range (elements of T;
//     Broadcast and AllGather run on bytes). Parts and chunks are multiples of 16 bytes, so every
//     chunk keeps the user pointers' 16-byte alignment (when they have it).
//   - A rank's data block is addressed by its rank (ring.rankAt(position)), never its position.
//   - In place (AllGather: send == recv + rank*count, ReduceScatter: send + rank*count == recv,
//     the others: send == recv) the rank's own block is never copied onto itself, and every input
//     element is read before (or by the same thread in the same step as) it is overwritten.
//   - preOp is applied where a rank's input enters the reduction, postOp where a fully reduced value
//     is produced; so each happens exactly once per element.
//   - nranks == 1: one local step per chunk (src -> dst with pre/post ops), no FIFO traffic.
// Both ends of every connection compute the same chunk sizes, so they count the same steps.
#pragma once

#include <cstdint>
#include <type_traits>

#include "device/prims/prims_common.h"

namespace braid {

struct RingInfo {
  const int* ranks;  // rank at each ring position
  int n;
  int index;  // this rank's position
  int rank;
  __device__ int rankAt(int pos) const { return ranks[((pos % n) + n) % n]; }
  __device__ int positionOf(int r) const {
    for (int p = 0; p < n; p++) {
      if (ranks[p] == r) return p;
    }
    return 0;
  }
};

// The channel's part of [0, count): equal shares rounded up to `grain` elements.
struct ChannelPart {
  int64_t begin;
  int64_t end;
};

__device__ __forceinline__ ChannelPart channelPart(int64_t count, int channel, int nChannels, int64_t grain) {
  const int64_t share = roundUp(divUp(count, nChannels), grain);
  int64_t begin = share * channel;
  int64_t end = begin + share;
  if (begin > count) begin = count;
  if (end > count) end = count;
  return {begin, end};
}

__device__ __forceinline__ int64_t minI64(int64_t a, int64_t b) { return a < b ? a : b; }

// A protocol's step for one (T, Fn), on buffers addressed in elements of elemSize bytes.
struct Prims {
  static constexpr bool kCopies = true;   // runs AllGather and Broadcast
  static constexpr bool kReduces = true;  // runs AllReduce, ReduceScatter and Reduce
  ProtoState* state;
  StepFn fn;
  int64_t elemSize;
  __device__ void step(const char* src, char* dst, int64_t nelem, int flags) const {
    fn(*state, src, dst, nelem, flags);
  }
  __device__ const char* at(const char* p, int64_t elems) const { return p + elems * elemSize; }
  __device__ char* at(char* p, int64_t elems) const { return p + elems * elemSize; }
  // The kStepEnter handshake of a write-direct (registered) operation.
  __device__ void enter() const { fn(*state, nullptr, nullptr, 1, kStepEnter); }
  // The kStepDrain wait that ends a read-direct operation.
  __device__ void drain() const { fn(*state, nullptr, nullptr, 1, kStepDrain); }
};

// The same interface with (T, Fn)'s step compiled in (Steps::run<T, Fn>, a protocol's): no call,
// and the state stays in registers wherever the caller's does. The byte copy runs the copies only,
// any other pair the reductions only, so that a kernel of one pair carries no code for the rest.
template <typename Steps, typename T, typename Fn>
struct InlinePrims {
  static constexpr bool kCopies = std::is_same<Fn, FuncSum<uint8_t>>::value;
  static constexpr bool kReduces = !kCopies;
  ProtoState* state;
  static constexpr int64_t elemSize = sizeof(T);
  __device__ __forceinline__ void step(const char* src, char* dst, int64_t nelem, int flags) const {
    Steps::template run<T, Fn>(*state, src, dst, nelem, flags);
  }
  __device__ const char* at(const char* p, int64_t elems) const { return p + elems * elemSize; }
  __device__ char* at(char* p, int64_t elems) const { return p + elems * elemSize; }
  __device__ void enter() const { step(nullptr, nullptr, 1, kStepEnter); }
  __device__ void drain() const { step(nullptr, nullptr, 1, kStepDrain); }
};

// The extra step flags of a ring whose buffers are registered (DevRegPeers), zero otherwise.
// Write-direct: sends that write into the next rank's receive buffer, receives that find the data
// in ours. Read-direct: a first hop that stays in the sender's send buffer, and its receive that
// reads it from there.
struct DirectFlags {
  int send;
  int recv;
};
__device__ __forceinline__ DirectFlags directFlags(bool direct, bool read) {
  if (!direct) return DirectFlags{0, 0};
  return read ? DirectFlags{kStepReadSend, kStepReadRecv} : DirectFlags{kStepDirectSend, kStepDirectRecv};
}

// The step size of a direct ring of two ranks, whose steps use no FIFO slot: read-direct
// (ReduceScatter, Reduce: the receive reads the peer's send buffer, which holds all of its data
// from the start) or write-direct (AllGather, Broadcast: the send writes into the peer's receive
// buffer and the receive only waits for it). Nothing bounds such a step but the channel's part, so
// it takes the part in one. Each slot-sized step cost a wait for the peer's tail and a barrier that
// drains the CTA's loads, and where both GPUs send (ReduceScatter, AllGather) a GPU published step
// k only after its own receive of step k-1, so the two moved in lockstep. One step per channel took
// registered ReduceScatter on 16 channels from 280 to 312 GB/s at 256 MiB and Reduce from 335 to
// 355 (2 H200, docs/performance-log.md, 2026-11-28). AllReduce's reduce-scatter half goes through
// the FIFO and keeps slot-sized steps. Both ranks compute it alike, so their step counts stay
// equal.
__device__ __forceinline__ int64_t twoRankDirectChunk(const RingInfo& ring, DirectFlags d, ChannelPart part,
                                                      int64_t chunkElems) {
  const bool wholePart = ring.n == 2 && d.recv != 0 && part.end > part.begin;
  return wholePart ? part.end - part.begin : chunkElems;
}

// AllReduce: per loop of n chunks, n-1 reduce-scatter steps then n-1 all-gather steps (§3.10).
// Direct: the all-gather half writes into the next rank's receive buffer (the reduce-scatter half
// keeps the FIFO: its partial sums have no place in a user buffer when the operation is in place).
template <typename P>
__device__ __forceinline__ void ringAllReduce(const P& prims, const RingInfo& ring, const char* src, char* dst,
                                              ChannelPart part, int64_t chunkElems, int64_t grain, DirectFlags d) {
  const int n = ring.n;
  const int i = ring.index;
  int64_t chunk = 0;
  for (int64_t loop = part.begin; loop < part.end; loop += n * chunk) {
    chunk = minI64(chunkElems, roundUp(divUp(part.end - loop, n), grain));
    auto off = [&](int r) { return loop + r * chunk; };
    auto len = [&](int r) {
      const int64_t o = loop + r * chunk;
      return o >= part.end ? int64_t{0} : minI64(chunk, part.end - o);
    };
    int r = ring.rankAt(i - 1);
    prims.step(prims.at(src, off(r)), nullptr, len(r), kStepSend | kStepPreOp);
    for (int j = 1; j < n - 1; j++) {
      r = ring.rankAt(i - 1 - j);
      prims.step(prims.at(src, off(r)), nullptr, len(r), kStepRecv | kStepSend | kStepPreOp);
    }
    r = ring.rank;
    prims.step(prims.at(src, off(r)), prims.at(dst, off(r)), len(r),
               kStepRecv | kStepSend | kStepPreOp | kStepPostOp | d.send);
    for (int j = 1; j < n - 1; j++) {
      r = ring.rankAt(i - j);
      prims.step(nullptr, prims.at(dst, off(r)), len(r), kStepRecv | kStepSend | d.recv | d.send);
    }
    r = ring.rankAt(i + 1);
    prims.step(nullptr, prims.at(dst, off(r)), len(r), kStepRecv | d.recv);
  }
}

// ReduceScatter: block r of every rank's input reduces onto rank r; count is the per-rank count.
// Read-direct: the first hop (a rank's input block, not yet reduced) is read by the next rank from
// the sender's send buffer; on two ranks that is the whole operation, in one step (twoRankDirectChunk).
template <typename P>
__device__ __forceinline__ void ringReduceScatter(const P& prims, const RingInfo& ring, const char* src, char* dst,
                                                  int64_t count, ChannelPart part, int64_t chunkElems, DirectFlags d) {
  const int n = ring.n;
  const int i = ring.index;
  chunkElems = twoRankDirectChunk(ring, d, part, chunkElems);
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    int r = ring.rankAt(i - 1);
    prims.step(prims.at(src, r * count + o), nullptr, len, kStepSend | kStepPreOp | d.send);
    for (int j = 1; j < n - 1; j++) {
      r = ring.rankAt(i - 1 - j);
      prims.step(prims.at(src, r * count + o), nullptr, len,
                 kStepRecv | kStepSend | kStepPreOp | (j == 1 ? d.recv : 0));
    }
    prims.step(prims.at(src, ring.rank * count + o), prims.at(dst, o), len,
               kStepRecv | kStepPreOp | kStepPostOp | (n == 2 ? d.recv : 0));
  }
}

// AllGather (bytes): count is the per-rank byte count. Direct: the first step needs the own
// block's place in dst even in place (the next rank's copy goes to the same offset there); on two
// ranks each channel sends and receives its part in one step (twoRankDirectChunk).
template <typename P>
__device__ __forceinline__ void ringAllGather(const P& prims, const RingInfo& ring, const char* src, char* dst,
                                              int64_t count, ChannelPart part, int64_t chunkElems, DirectFlags d) {
  const int n = ring.n;
  const int i = ring.index;
  char* own = prims.at(dst, ring.rank * count);
  const bool skipOwn = src == own && d.send == 0;
  chunkElems = twoRankDirectChunk(ring, d, part, chunkElems);
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    prims.step(prims.at(src, o), skipOwn ? nullptr : prims.at(own, o), len, kStepSend | d.send);
    for (int j = 1; j < n - 1; j++) {
      const int r = ring.rankAt(i - j);
      prims.step(nullptr, prims.at(dst, r * count + o), len, kStepRecv | kStepSend | d.recv | d.send);
    }
    prims.step(nullptr, prims.at(dst, ring.rankAt(i + 1) * count + o), len, kStepRecv | d.recv);
  }
}

// Broadcast (bytes): pipelined from the root along the ring (direct on two ranks: in one step).
template <typename P>
__device__ __forceinline__ void ringBroadcast(const P& prims, const RingInfo& ring, const char* src, char* dst,
                                              int root, ChannelPart part, int64_t chunkElems, DirectFlags d) {
  const int n = ring.n;
  const int p = ((ring.index - ring.positionOf(root)) % n + n) % n;  // 0 at the root
  const bool skipOwn = src == dst && d.send == 0;
  chunkElems = twoRankDirectChunk(ring, d, part, chunkElems);
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    if (p == 0) {
      prims.step(prims.at(src, o), skipOwn ? nullptr : prims.at(dst, o), len, kStepSend | d.send);
    } else if (p < n - 1) {
      prims.step(nullptr, prims.at(dst, o), len, kStepRecv | kStepSend | d.recv | d.send);
    } else {
      prims.step(nullptr, prims.at(dst, o), len, kStepRecv | d.recv);
    }
  }
}

// Reduce: pipelined along the ring, starting after the root and ending at it. Read-direct: the
// first rank's input is read by the second from its send buffer (on two ranks in one step).
template <typename P>
__device__ __forceinline__ void ringReduce(const P& prims, const RingInfo& ring, const char* src, char* dst, int root,
                                           ChannelPart part, int64_t chunkElems, DirectFlags d) {
  const int n = ring.n;
  const int q = ((ring.index - ring.positionOf(root) - 1) % n + n) % n;  // n-1 at the root
  const int firstRecv = q == 1 ? d.recv : 0;
  chunkElems = twoRankDirectChunk(ring, d, part, chunkElems);
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    if (q == 0) {
      prims.step(prims.at(src, o), nullptr, len, kStepSend | kStepPreOp | d.send);
    } else if (q < n - 1) {
      prims.step(prims.at(src, o), nullptr, len, kStepRecv | kStepSend | kStepPreOp | firstRecv);
    } else {
      prims.step(prims.at(src, o), prims.at(dst, o), len, kStepRecv | kStepPreOp | kStepPostOp | firstRecv);
    }
  }
}

// One rank: dst = post(pre(src)) chunk by chunk, skipped when it would copy a buffer onto itself.
template <typename P>
__device__ __forceinline__ void localCopy(const P& prims, const char* src, char* dst, ChannelPart part,
                                          int64_t chunkElems, bool hasOps) {
  if (src == dst && !hasOps) return;
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    prims.step(prims.at(src, o), prims.at(dst, o), minI64(chunkElems, part.end - o), kStepPreOp | kStepPostOp);
  }
}

}  // namespace braid
