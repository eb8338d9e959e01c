// Direct algorithms on the LL protocol: a CTA writes its part of the data straight into each peer's
// FIFO and reads each peer's part from its own, so every collective takes one hop whatever the rank
// count (DESIGN §4's one-shot). The connections are DevDirectChannel's; the line format, flags and
// flow control are LL's (prims_ll.h), per connection: a sender fills step s once
// head + kFifoSlotsLL > s, and a receiver returns its slot once every thread has read its lines.
//
// A chunk sends first and receives second, and a thread handles the same lines (tid, tid +
// nthreads, ...) in both phases, so an in-place operation reads each input line before the same
// thread overwrites it.
//
// Reductions run over the ranks in rank order on every rank, pre(x_0) op pre(x_1) op ..., then
// post(): all ranks of an AllReduce get bit-identical results, whatever the type.
#pragma once

#include <cstdint>

#include "device/prims/prims_ll.h"

namespace braid {

// One CTA thread's view of its direct channel. Peer slot k (0..nranks-2) is peer offset k + 1:
// sends go to rank + k + 1, receives come from rank - k - 1.
struct DirectState {
  DevDirectChannel* ch;
  AbortWatch abort;
  int tid;
  int nthreads;
  int rank;
  int nranks;
  uint64_t slotBytes;
  uint64_t scalar;
  uint64_t sendStep[kMaxDirectPeers];
  uint64_t recvStep[kMaxDirectPeers];
  uint64_t headCache[kMaxDirectPeers];

  __device__ DirectState(DevComm* comm, PrimsShared* shared, int threadId, int threads, uint64_t workScalar)
      : ch(&comm->direct[blockIdx.x]),
        abort(comm->abortFlag, shared),
        tid(threadId),
        nthreads(threads),
        rank(comm->rank),
        nranks(comm->nranks),
        slotBytes(comm->slotBytes[kProtoLL]),
        scalar(workScalar) {
    for (int k = 0; k < nranks - 1; k++) {
      sendStep[k] = ch->send[k].step;
      recvStep[k] = ch->recv[k].step;
      headCache[k] = ch->send[k].headSeen;
    }
  }

  // Steps go back to DevComm for the next kernel (every thread counted the same steps).
  __device__ void finish() const {
    if (tid != 0) return;
    for (int k = 0; k < nranks - 1; k++) {
      ch->send[k].step = sendStep[k];
      ch->send[k].headSeen = headCache[k];
      ch->recv[k].step = recvStep[k];
    }
  }
};

// One chunk of a direct operation: nelem elements of the step's T from every source.
struct DirectChunk {
  int64_t nelem;
  const char* send[kMaxDirectPeers];  // what goes to peer slot k (null: nothing)
  char* recv[kMaxDirectPeers];        // copy form: where peer slot k's data goes (null: nothing)
  bool reduceAll;                     // reduce form: receive from every peer and reduce with own
  const char* own;                    // reduce form: this rank's input
  char* dst;                          // reduce form: the result
  const char* copySrc;                // copy form: a local copy that runs with the receives
  char* copyDst;
};

__device__ __forceinline__ void directWaitCredit(DirectState& s, int k) {
  while (s.headCache[k] + kFifoSlotsLL <= s.sendStep[k]) {
    s.headCache[k] = ldVolatile64(s.ch->send[k].head);
    if (s.headCache[k] + kFifoSlotsLL > s.sendStep[k] || s.abort.poll()) return;
  }
}

__device__ __forceinline__ char* directOutSlot(const DirectState& s, int k) {
  return s.ch->send[k].buffs[kProtoLL] + (s.sendStep[k] % kFifoSlotsLL) * s.slotBytes;
}

__device__ __forceinline__ const char* directInSlot(const DirectState& s, int k) {
  return s.ch->recv[k].buffs[kProtoLL] + (s.recvStep[k] % kFifoSlotsLL) * s.slotBytes;
}

// Every send of the chunk; a source shared by several peers is re-read from L1.
template <typename T>
__device__ __forceinline__ void directSends(DirectState& s, const DirectChunk& c, int64_t nbytes, int64_t nlines) {
  const int npeers = s.nranks - 1;
  if (s.tid < nlines) {
    for (int k = 0; k < npeers; k++) {
      if (c.send[k] != nullptr) directWaitCredit(s, k);
    }
  }
  for (int64_t base = s.tid; base < nlines; base += static_cast<int64_t>(kLLUnroll) * s.nthreads) {
    for (int k = 0; k < npeers; k++) {
      const char* src = c.send[k];
      if (src == nullptr) continue;
      const bool aligned = reinterpret_cast<uintptr_t>(src) % 8 == 0;
      char* out = directOutSlot(s, k);
      const uint32_t flag = static_cast<uint32_t>(s.sendStep[k] + 1);
      uint64_t v[kLLUnroll];
#pragma unroll
      for (int u = 0; u < kLLUnroll; u++) {
        const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
        v[u] = l < nlines ? loadPack8<T>(src + 8 * l, llLineBytes(nbytes, l), aligned) : 0;
      }
#pragma unroll
      for (int u = 0; u < kLLUnroll; u++) {
        const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
        if (l < nlines) llSendLine(out + 16 * l, v[u], flag);
      }
    }
  }
  for (int k = 0; k < npeers; k++) {
    if (c.send[k] != nullptr) s.sendStep[k]++;
  }
}

// dst = post(pre(x_0) op pre(x_1) op ... op pre(x_{n-1})), x_rank = own, the others from the FIFOs.
template <typename T, typename Fn>
__device__ __forceinline__ void directReduceAll(DirectState& s, const Fn& fn, const DirectChunk& c, int64_t nbytes,
                                                int64_t nlines) {
  const int n = s.nranks;
  const bool ownAligned = reinterpret_cast<uintptr_t>(c.own) % 8 == 0;
  const bool dstAligned = reinterpret_cast<uintptr_t>(c.dst) % 8 == 0;
  for (int64_t base = s.tid; base < nlines; base += static_cast<int64_t>(kLLUnroll) * s.nthreads) {
    uint64_t acc[kLLUnroll];
    for (int q = 0; q < n; q++) {
      uint64_t v[kLLUnroll];
      if (q == s.rank) {
#pragma unroll
        for (int u = 0; u < kLLUnroll; u++) {
          const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
          v[u] = l < nlines ? loadPack8<T>(c.own + 8 * l, llLineBytes(nbytes, l), ownAligned) : 0;
        }
      } else {
        const int k = (s.rank - q + n) % n - 1;
        llRecvLines(s.abort, directInSlot(s, k), static_cast<uint32_t>(s.recvStep[k] + 1), base, s.nthreads, nlines, v);
      }
#pragma unroll
      for (int u = 0; u < kLLUnroll; u++) {
        if (Fn::kHasPreOp) v[u] = applyPreOp<Fn, T, uint64_t>(fn, v[u]);
        acc[u] = q == 0 ? v[u] : applyReduce<Fn, T, uint64_t>(fn, acc[u], v[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
      if (l >= nlines) break;
      if (Fn::kHasPostOp) acc[u] = applyPostOp<Fn, T, uint64_t>(fn, acc[u]);
      storePack8<T>(c.dst + 8 * l, acc[u], llLineBytes(nbytes, l), dstAligned);
    }
  }
}

// Each peer's lines to its own destination, and the local copy.
template <typename T>
__device__ __forceinline__ void directCopies(DirectState& s, const DirectChunk& c, int64_t nbytes, int64_t nlines) {
  for (int k = 0; k < s.nranks - 1; k++) {
    char* dst = c.recv[k];
    if (dst == nullptr) continue;
    const bool aligned = reinterpret_cast<uintptr_t>(dst) % 8 == 0;
    const char* in = directInSlot(s, k);
    const uint32_t flag = static_cast<uint32_t>(s.recvStep[k] + 1);
    for (int64_t base = s.tid; base < nlines; base += static_cast<int64_t>(kLLUnroll) * s.nthreads) {
      uint64_t v[kLLUnroll];
      llRecvLines(s.abort, in, flag, base, s.nthreads, nlines, v);
#pragma unroll
      for (int u = 0; u < kLLUnroll; u++) {
        const int64_t l = base + static_cast<int64_t>(u) * s.nthreads;
        if (l < nlines) storePack8<T>(dst + 8 * l, v[u], llLineBytes(nbytes, l), aligned);
      }
    }
  }
  if (c.copySrc == nullptr) return;
  const bool srcAligned = reinterpret_cast<uintptr_t>(c.copySrc) % 8 == 0;
  const bool dstAligned = reinterpret_cast<uintptr_t>(c.copyDst) % 8 == 0;
  for (int64_t l = s.tid; l < nlines; l += s.nthreads) {
    const int lineBytes = llLineBytes(nbytes, l);
    storePack8<T>(c.copyDst + 8 * l, loadPack8<T>(c.copySrc + 8 * l, lineBytes, srcAligned), lineBytes, dstAligned);
  }
}

// After the receives: every thread has read its lines, then thread k returns peer slot k's slot.
__device__ __forceinline__ void directPostHeads(DirectState& s, const DirectChunk& c) {
  bool any = c.reduceAll;
  for (int k = 0; k < s.nranks - 1 && !any; k++) any = c.recv[k] != nullptr;
  if (!any) return;
  namedBarrierSync(kLLBarrier, s.nthreads);
  for (int k = 0; k < s.nranks - 1; k++) {
    if (!c.reduceAll && c.recv[k] == nullptr) continue;
    if (s.tid == k && !s.abort.aborted()) stRelaxedSys(s.ch->recv[k].head, s.recvStep[k] + 1);
    s.recvStep[k]++;
  }
}

// The reduce form's receives for one (T, Fn). Not inlined: one copy per (T, Fn); the sends and
// copies move bits and are compiled once per element size.
template <typename T, typename Fn>
__device__ __noinline__ void llDirectReduce(DirectState& s, const DirectChunk& c, int64_t nbytes, int64_t nlines) {
  const Fn fn(s.scalar);
  directReduceAll<T, Fn>(s, fn, c, nbytes, nlines);
}

using DirectReduceFn = void (*)(DirectState&, const DirectChunk&, int64_t nbytes, int64_t nlines);

template <int kBytes>
__device__ __noinline__ void llDirectMove(DirectState& s, const DirectChunk& c, int64_t nbytes, int64_t nlines) {
  using U = typename UintOfSize<kBytes>::Type;
  directSends<U>(s, c, nbytes, nlines);
  if (!c.reduceAll) directCopies<U>(s, c, nbytes, nlines);
}

// One chunk: sends, then the receives (reduce: `reduce`, the (T, Fn) one), then the slots go back.
__device__ __forceinline__ void llDirectChunk(DirectState& s, const DirectChunk& c, int64_t elemSize,
                                              DirectReduceFn reduce) {
  if (c.nelem <= 0) return;
  const int64_t nbytes = c.nelem * elemSize;
  const int64_t nlines = divUp(nbytes, 8);
  switch (elemSize) {
    case 1:
      llDirectMove<1>(s, c, nbytes, nlines);
      break;
    case 2:
      llDirectMove<2>(s, c, nbytes, nlines);
      break;
    case 4:
      llDirectMove<4>(s, c, nbytes, nlines);
      break;
    default:
      llDirectMove<8>(s, c, nbytes, nlines);
      break;
  }
  if (c.reduceAll) reduce(s, c, nbytes, nlines);
  directPostHeads(s, c);
}

}  // namespace braid
