// Direct algorithms on the Simple protocol: a CTA copies its part of the data straight into each
// peer's Simple FIFO on the direct connections (a push: every byte that crosses NVLink is a store),
// and each rank reduces or copies what its peers pushed from its own memory. Every collective takes
// one hop per phase whatever the rank count; the two-shot AllReduce takes two (coll/direct_colls.h).
// This is the mid-size path: LL (prims_direct_ll.h) halves the bandwidth with its flags, a ring
// takes 2 (n - 1) hops.
//
// One chunk, with step s = the connection's step at the kernel's start + the chunk's index, the
// same on every connection the chunk uses (both ends count the chunks alike):
//   1. thread k waits until peer slot k's FIFO has room for step s (head + kFifoSlotsSimple > s);
//      bar.sync;
//   2. every thread copies its share of each peer's data into that peer's slot s % kFifoSlotsSimple;
//      bar.sync;
//   3. thread k publishes the step to peer slot k (fence.acq_rel.sys, then tail = s + 1, which by
//      cumulativity publishes every thread's payload stores ordered before it by the barrier), then
//      waits until peer slot k's step s has landed here (ld.acquire.sys of our tail); bar.sync;
//   4. every thread reduces (in rank order: post(pre(x_0) op pre(x_1) op ... op pre(x_{n-1})), the
//      same bits on every rank) or copies what landed; bar.sync;
//   5. thread k returns the slot to peer slot k (head = s + 1: the slot's loads were performed, their
//      values stored before the barrier, so no fence).
// Steps with no payload (a short block's empty share) take the same handshake. In place: every
// send of a chunk is copied out before anything of it is written.
//
// The connections' Simple FIFOs are DevComm::directSlotBytes slots; direct connections carry them
// only where every peer is on this host (no NET connection: its proxy ships LL steps only).
#pragma once

#include <cstdint>

#include "device/prims/direct_chunk.h"
#include "device/prims/direct_conns.h"
#include "device/prims/prims_simple.h"

namespace braid {

constexpr int kDirectReduceUnroll = 4;

// What every thread of the CTA uses: the direct channel as this kernel sees it (DirectConns, the
// Simple FIFOs), the tails, and a reduction's inputs.
struct DirectSimpleShared : DirectConns {
  uint64_t* outTail[kMaxDirectPeers];       // peer slot k's tail (its memory)
  const uint64_t* inTail[kMaxDirectPeers];  // ours for peer slot k
  const char* source[kMaxDirectPeers + 1];  // a reduction's inputs in rank order (per chunk)
  char* copyTo[kMaxDirectPeers];            // where a reduction's result also goes (symmetric kernels)
};

struct DirectSimpleState {
  DirectSimpleShared* sh;
  AbortWatch abort;
  int tid;
  int nthreads;
  int rank;
  int nranks;
  uint64_t chunk;  // chunks of the operation done so far

  __device__ explicit DirectSimpleState(DirectSimpleShared* direct)
      : sh(direct),
        abort(direct->abortFlag, direct->prims),
        tid(static_cast<int>(threadIdx.x)),
        nthreads(static_cast<int>(blockDim.x)),
        rank(direct->rank),
        nranks(direct->nranks),
        chunk(0) {}

  // Called by every thread at the kernel's start.
  static __device__ void load(const DevDirectChannel* ch, const DevComm* comm, PrimsShared* prims,
                              DirectSimpleShared* sh, uint64_t scalar, bool sharedSteps) {
    loadDirectConns(ch, comm, prims, sh, kProtoSimple, comm->directSlotBytes, scalar, sharedSteps);
    const int k = static_cast<int>(threadIdx.x);
    if (k < kMaxDirectPeers) {
      sh->outTail[k] = ch->send[k].tail;
      sh->inTail[k] = ch->recv[k].tail;
    }
    namedBarrierSync(kSimpleBarrier, static_cast<int>(blockDim.x));
  }

  __device__ void finish(DevDirectChannel* ch, uint32_t usedSend, uint32_t usedRecv, bool sharedSteps) const {
    storeDirectSteps(ch, sh, chunk, usedSend, usedRecv, sharedSteps);
  }

  __device__ int sendPeer(int k) const { return directSendPeer(rank, nranks, k); }
  __device__ int recvPeer(int k) const { return directRecvPeer(rank, nranks, k); }
  __device__ char* outSlot(int k) const {
    return sh->out[k] + ((sh->sendStep[k] + chunk) % kFifoSlotsSimple) * sh->slotBytes;
  }
  __device__ const char* inSlot(int k) const {
    return sh->in[k] + ((sh->recvStep[k] + chunk) % kFifoSlotsSimple) * sh->slotBytes;
  }
};

// A copy of nelem elements of kBytes each (no reduction: the bits move as they are), from a FIFO
// slot or a user buffer to the other or to a user buffer: FIFO slots are 16-byte aligned, user
// buffers may not be (simpleReduceCopy keeps the FIFO side's accesses wide).
template <int kBytes>
__device__ __forceinline__ void directSimpleCopy(const DirectSimpleState& s, const char* fifoSrc, const char* userSrc,
                                                 char* userDst, char* fifoDst, int64_t nelem) {
  using U = typename UintOfSize<kBytes>::Type;
  simpleReduceCopy<U, FuncSum<U>>(FuncSum<U>(), s.tid, s.nthreads, reinterpret_cast<const U*>(fifoSrc),
                                  reinterpret_cast<const U*>(userSrc), reinterpret_cast<U*>(userDst),
                                  reinterpret_cast<U*>(fifoDst), nelem, false, false, false);
}

// Element i of the T array at p, read as its bits past L1 (a FIFO slot a peer may have rewritten).
template <typename T>
__device__ __forceinline__ T loadElem(const char* p, int64_t i) {
  using U = typename UintOfSize<sizeof(T)>::Type;
  const U bits = reinterpret_cast<const volatile U*>(p)[i];
  T v;
  memcpy(&v, &bits, sizeof(T));
  return v;
}

// dst = post(pre(x_0) op ... op pre(x_{n-1})) over nelem elements, x_q = sh->source[q], and the
// same values to sh->copyTo[0..nCopies) in the same pass. 16-byte packs, kDirectReduceUnroll of
// them per source in flight, when every pointer allows; else elements. Every source but the
// caller's own input is in this GPU's memory, so fewer packs in flight than the ring's
// kSimpleUnroll suffice, and each of the 57 (T, Fn) copies stays small (the library keeps within
// 15 MB per architecture).
template <typename T, typename Fn>
__device__ __forceinline__ void directSimpleReduceAll(const DirectSimpleState& s, const Fn& fn, char* dst, int nCopies,
                                                      int64_t nelem) {
  const char* const* src = s.sh->source;
  char* const* copyTo = s.sh->copyTo;
  const int n = s.nranks;
  uintptr_t bits = reinterpret_cast<uintptr_t>(dst);
  for (int q = 0; q < n; q++) bits |= reinterpret_cast<uintptr_t>(src[q]);
  for (int c = 0; c < nCopies; c++) bits |= reinterpret_cast<uintptr_t>(copyTo[c]);
  int64_t done = 0;
  if (bits % 16 == 0) {
    constexpr int kU = kDirectReduceUnroll;
    const int64_t nPacks = nelem * static_cast<int64_t>(sizeof(T)) / 16;
    for (int64_t base = s.tid; base < nPacks; base += static_cast<int64_t>(kU) * s.nthreads) {
      uint4 acc[kU];
      for (int q = 0; q < n; q++) {
        const uint4* in = reinterpret_cast<const uint4*>(src[q]);
        uint4 v[kU];
#pragma unroll
        for (int u = 0; u < kU; u++) {
          const int64_t i = base + static_cast<int64_t>(u) * s.nthreads;
          v[u] = i < nPacks ? ldVolatile16(in + i) : uint4{};
        }
#pragma unroll
        for (int u = 0; u < kU; u++) {
          if (Fn::kHasPreOp) v[u] = applyPreOp<Fn, T, uint4>(fn, v[u]);
          acc[u] = q == 0 ? v[u] : applyReduce<Fn, T, uint4>(fn, acc[u], v[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kU; u++) {
        const int64_t i = base + static_cast<int64_t>(u) * s.nthreads;
        if (i >= nPacks) break;
        if (Fn::kHasPostOp) acc[u] = applyPostOp<Fn, T, uint4>(fn, acc[u]);
        stGlobal16(reinterpret_cast<uint4*>(dst) + i, acc[u]);
        for (int c = 0; c < nCopies; c++) stGlobal16(reinterpret_cast<uint4*>(copyTo[c]) + i, acc[u]);
      }
    }
    done = nPacks * 16 / static_cast<int64_t>(sizeof(T));
  }
  for (int64_t i = done + s.tid; i < nelem; i += s.nthreads) {
    T acc{};
    for (int q = 0; q < n; q++) {
      T v = loadElem<T>(src[q], i);
      if (Fn::kHasPreOp) v = fn.preOp(v);
      acc = q == 0 ? v : fn(acc, v);
    }
    if (Fn::kHasPostOp) acc = fn.postOp(acc);
    reinterpret_cast<T*>(dst)[i] = acc;
    for (int c = 0; c < nCopies; c++) reinterpret_cast<T*>(copyTo[c])[i] = acc;
  }
}

// The reduce form's reduction for one (T, Fn). Not inlined: one copy per (T, Fn); its state is
// rebuilt from shared memory.
template <typename T, typename Fn>
__device__ __noinline__ void simpleDirectReduce(DirectSimpleShared* sh, uint64_t chunk, char* dst, int nCopies,
                                                int64_t nelem) {
  DirectSimpleState s(sh);
  s.chunk = chunk;
  const Fn fn(sh->scalar);
  directSimpleReduceAll<T, Fn>(s, fn, dst, nCopies, nelem);
}

using DirectSimpleReduceFn = void (*)(DirectSimpleShared*, uint64_t chunk, char* dst, int nCopies, int64_t nelem);

// Step 1: thread k waits for room in peer slot k's FIFO.
__device__ __forceinline__ void directSimpleWaitRoom(DirectSimpleState& s, uint32_t sendMask) {
  const int k = s.tid;
  if (k < s.nranks - 1 && ((sendMask >> k) & 1)) {
    const uint64_t step = s.sh->sendStep[k] + s.chunk;
    while (ldAcquireSys(s.sh->head[k]) + kFifoSlotsSimple <= step) {
      if (s.abort.poll()) break;
    }
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
}

// Step 3: thread k publishes its send and waits for its receive.
__device__ __forceinline__ void directSimplePostAndWait(DirectSimpleState& s, uint32_t sendMask, uint32_t recvMask) {
  const int k = s.tid;
  if (k < s.nranks - 1 && !s.abort.aborted()) {
    if ((sendMask >> k) & 1) {
      fenceAcqRelSys();
      stRelaxedSys(s.sh->outTail[k], s.sh->sendStep[k] + s.chunk + 1);
    }
    if ((recvMask >> k) & 1) {
      const uint64_t step = s.sh->recvStep[k] + s.chunk;
      while (ldAcquireSys(s.sh->inTail[k]) <= step) {
        if (s.abort.poll()) break;
      }
    }
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
}

// Steps 2 and 4's moves, for elements of kBytes: the sends, then (copy form) what landed.
template <int kBytes>
__device__ __forceinline__ void directSimpleSends(DirectSimpleState& s, const DirectChunk& c) {
  for (int k = 0; k < s.nranks - 1; k++) {
    if (((c.sendMask >> k) & 1) == 0) continue;
    const int q = s.sendPeer(k);
    const int64_t n = shareOf(c, c.sendsPeerBlock ? q : s.rank);
    directSimpleCopy<kBytes>(s, nullptr, c.send + c.sendStride * q, nullptr, s.outSlot(k), n);
  }
}
template <int kBytes>
__device__ __forceinline__ void directSimpleCopies(DirectSimpleState& s, const DirectChunk& c) {
  for (int k = 0; k < s.nranks - 1; k++) {
    if (((c.recvMask >> k) & 1) == 0) continue;
    const int q = s.recvPeer(k);
    const int64_t n = shareOf(c, c.recvsPeerBlock ? q : s.rank);
    directSimpleCopy<kBytes>(s, s.inSlot(k), nullptr, c.recv + c.recvStride * q, nullptr, n);
  }
  if (c.copySrc != nullptr) directSimpleCopy<kBytes>(s, nullptr, c.copySrc, c.copyDst, nullptr, shareOf(c, s.rank));
}

template <int kBytes>
__device__ __forceinline__ void directSimpleMove(DirectSimpleState& s, const DirectChunk& c, bool sends) {
  if (sends) {
    directSimpleSends<kBytes>(s, c);
  } else if (!c.reduceAll) {
    directSimpleCopies<kBytes>(s, c);
  }
}

__device__ __forceinline__ void directSimpleMoveBytes(DirectSimpleState& s, const DirectChunk& c, int64_t elemSize,
                                                      bool sends) {
  switch (elemSize) {
    case 1:
      directSimpleMove<1>(s, c, sends);
      break;
    case 2:
      directSimpleMove<2>(s, c, sends);
      break;
    case 4:
      directSimpleMove<4>(s, c, sends);
      break;
    default:
      directSimpleMove<8>(s, c, sends);
      break;
  }
}

// A barrier with the same CTA of every peer: a chunk with no payload on every connection (steps
// 1, 3 and 5). What this CTA's threads stored before it is visible to the peers' CTAs after theirs,
// and what they loaded was performed. Every rank's CTA takes the same barriers.
__device__ __forceinline__ void simpleDirectBarrier(DirectSimpleState& s) {
  const uint32_t everyPeer = (1u << (s.nranks - 1)) - 1;
  directSimpleWaitRoom(s, everyPeer);
  directSimplePostAndWait(s, everyPeer, everyPeer);
  const int k = s.tid;
  if (k < s.nranks - 1 && !s.abort.aborted()) stRelaxedSys(s.sh->recvHead[k], s.sh->recvStep[k] + s.chunk + 1);
  s.chunk++;
}

// One chunk (every share at most a slot's payload): the five steps of the header comment.
// `reduce` is the (T, Fn) one for the reduce form.
__device__ __forceinline__ void simpleDirectChunk(DirectSimpleState& s, const DirectChunk& c, int64_t elemSize,
                                                  DirectSimpleReduceFn reduce) {
  directSimpleWaitRoom(s, c.sendMask);
  if (!s.abort.aborted()) directSimpleMoveBytes(s, c, elemSize, true);
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  directSimplePostAndWait(s, c.sendMask, c.recvMask);
  if (c.reduceAll && c.recvMask != 0) {
    const int q = s.tid;
    if (q < s.nranks) s.sh->source[q] = q == s.rank ? c.own : s.inSlot(s.rank - q - 1 + (q > s.rank ? s.nranks : 0));
    namedBarrierSync(kSimpleBarrier, s.nthreads);
  }
  if (!s.abort.aborted()) {
    if (c.reduceAll && c.recvMask != 0) {
      reduce(s.sh, s.chunk, c.dst, 0, shareOf(c, s.rank));
    } else {
      directSimpleMoveBytes(s, c, elemSize, false);
    }
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  const int k = s.tid;
  if (k < s.nranks - 1 && ((c.recvMask >> k) & 1) && !s.abort.aborted()) {
    stRelaxedSys(s.sh->recvHead[k], s.sh->recvStep[k] + s.chunk + 1);
  }
  s.chunk++;
}

}  // namespace braid
