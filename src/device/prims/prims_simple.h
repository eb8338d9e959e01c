// Simple protocol: bulk 16-byte vector copies through the FIFO slots, with the tail/head handshake.
//
// Threads: the algorithm runs on nthreads "workers"; one extra "poster" warp (launched beside them)
// publishes completed steps, so that the system-scope fence overlaps the workers' next copy.
//
// One step, workers:
//   1. worker 0 waits until the step may run: recv: tail >= recvStep + 1 (ld.acquire.sys);
//      send: head + kFifoSlots >= sendStep + 1 (ld.acquire.sys), i.e. the receiver has consumed the
//      step that last used this slot.
//   2. bar.sync(workers): the acquire by worker 0 plus the barrier order every worker's FIFO reads and
//      writes after the handshake (and ld.acquire invalidates the SM's L1, so no stale line is read).
//   3. every worker copies/reduces its share of the step with 16-byte accesses, kSimpleUnroll packs per source
//      in flight per thread (or, when a user pointer is not 16-byte aligned, element by element, or by
//      the widest words all pointers allow for a copy, with as many in flight).
//   4. bar.sync(workers); worker 0 stores sendDone = sendStep + 1 / recvDone = recvStep + 1 in shared
//      memory with st.release.cta. The barrier orders all workers' payload stores before it.
// Poster (one thread): ld.acquire.cta of sendDone/recvDone; for a new sendDone: fence.acq_rel.sys then
// tail = sendDone (st.relaxed.sys), which by cumulativity publishes the payload the workers wrote
// before the release; for a new recvDone: head = recvDone. head needs no fence: the slot's loads have
// been performed, since their values were stored (to dst or the next FIFO) before the barrier.
// The poster's posts never wait on the workers' next wait, so the ring cannot deadlock on it.
#pragma once

#include <cstdint>

#include "device/prims/prims_common.h"
#include "device/reduce/reduce_ops.h"

namespace braid {

// 16-byte packs per source a thread keeps in flight: 8, as NCCL does on sm_80+. With 4 the loop is
// bound by load latency (a CTA reached ~18 GB/s instead of the ~23 GB/s a channel needs).
constexpr int kSimpleUnroll = 8;
constexpr int kSimpleBarrier = 1;  // workers' named barrier

// v = [post]( fifoIn && userIn ? reduce([preIn](fifoIn), [pre](userIn)) : whichever is present ),
// stored to userOut and fifoOut when present. preIn: fifoIn is a peer's raw input (read-direct).
// All pointers present are 16-byte aligned; nPacks 16-byte packs.
template <typename T, typename Fn>
__device__ __forceinline__ void reduceCopyPacks(const Fn& fn, int tid, int nthreads, const uint4* fifoIn,
                                                const uint4* userIn, uint4* userOut, uint4* fifoOut, int64_t nPacks,
                                                bool pre, bool preIn, bool post) {
  constexpr int kU = kSimpleUnroll;
  const int lane = tid % 32;
  const int64_t warpPacks = 32 * kU;
  const int64_t fullEnd = nPacks / warpPacks * warpPacks;
  for (int64_t base = static_cast<int64_t>(tid / 32) * warpPacks + lane; base < fullEnd;
       base += static_cast<int64_t>(nthreads / 32) * warpPacks) {
    uint4 v[kU];
    if (fifoIn != nullptr) {
#pragma unroll
      for (int u = 0; u < kU; u++) v[u] = ldVolatile16(fifoIn + base + u * 32);
      if (Fn::kHasPreOp && preIn) {
#pragma unroll
        for (int u = 0; u < kU; u++) v[u] = applyPreOp<Fn, T, uint4>(fn, v[u]);
      }
    }
    if (userIn != nullptr) {
      uint4 s[kU];
#pragma unroll
      for (int u = 0; u < kU; u++) s[u] = ldGlobal16(userIn + base + u * 32);
#pragma unroll
      for (int u = 0; u < kU; u++) {
        if (Fn::kHasPreOp && pre) s[u] = applyPreOp<Fn, T, uint4>(fn, s[u]);
        v[u] = fifoIn != nullptr ? applyReduce<Fn, T, uint4>(fn, v[u], s[u]) : s[u];
      }
    }
    if (Fn::kHasPostOp && post) {
#pragma unroll
      for (int u = 0; u < kU; u++) v[u] = applyPostOp<Fn, T, uint4>(fn, v[u]);
    }
    if (userOut != nullptr) {
#pragma unroll
      for (int u = 0; u < kU; u++) stGlobal16(userOut + base + u * 32, v[u]);
    }
    if (fifoOut != nullptr) {
#pragma unroll
      for (int u = 0; u < kU; u++) stGlobal16(fifoOut + base + u * 32, v[u]);
    }
  }
  for (int64_t i = fullEnd + tid; i < nPacks; i += nthreads) {
    uint4 v = fifoIn != nullptr ? ldVolatile16(fifoIn + i) : uint4{};
    if (Fn::kHasPreOp && preIn && fifoIn != nullptr) v = applyPreOp<Fn, T, uint4>(fn, v);
    if (userIn != nullptr) {
      uint4 s = ldGlobal16(userIn + i);
      if (Fn::kHasPreOp && pre) s = applyPreOp<Fn, T, uint4>(fn, s);
      v = fifoIn != nullptr ? applyReduce<Fn, T, uint4>(fn, v, s) : s;
    }
    if (Fn::kHasPostOp && post) v = applyPostOp<Fn, T, uint4>(fn, v);
    if (userOut != nullptr) stGlobal16(userOut + i, v);
    if (fifoOut != nullptr) stGlobal16(fifoOut + i, v);
  }
}

// One element of reduceCopyElems: v = [post](fifoIn && userIn ? reduce([preIn](fifoIn), [pre](userIn)) : either).
template <typename T, typename Fn>
__device__ __forceinline__ T reduceElem(const Fn& fn, bool hasFifoIn, T fifoV, bool hasUserIn, T userV, bool pre,
                                        bool preIn, bool post) {
  T v = fifoV;
  if (Fn::kHasPreOp && preIn && hasFifoIn) v = fn.preOp(v);
  if (hasUserIn) {
    if (Fn::kHasPreOp && pre) userV = fn.preOp(userV);
    v = hasFifoIn ? fn(v, userV) : userV;
  }
  if (Fn::kHasPostOp && post) v = fn.postOp(v);
  return v;
}

// The same, element by element over [begin, end): pointers that are not all 16-byte aligned, and
// the sub-16-byte tail. Unrolled as the packs are, kU elements per source in flight per thread (one
// access each, coalesced across the warp): one element at a time is bound by load latency and ran
// unaligned collectives at about half their aligned speed (as NCCL does, more elements in flight
// make up for the narrower accesses).
template <typename T, typename Fn>
__device__ __forceinline__ void reduceCopyElems(const Fn& fn, int tid, int nthreads, const T* fifoIn, const T* userIn,
                                                T* userOut, T* fifoOut, int64_t begin, int64_t end, bool pre,
                                                bool preIn, bool post) {
  constexpr int kU = 16;
  const bool hasFifoIn = fifoIn != nullptr;
  const bool hasUserIn = userIn != nullptr;
  const int64_t warpElems = 32 * kU;
  const int64_t fullEnd = begin + (end - begin) / warpElems * warpElems;
  for (int64_t base = begin + static_cast<int64_t>(tid / 32) * warpElems + tid % 32; base < fullEnd;
       base += static_cast<int64_t>(nthreads / 32) * warpElems) {
    T f[kU];
    T u[kU];
#pragma unroll
    for (int k = 0; k < kU; k++) {
      f[k] = hasFifoIn ? fifoIn[base + k * 32] : T();
      u[k] = hasUserIn ? userIn[base + k * 32] : T();
    }
#pragma unroll
    for (int k = 0; k < kU; k++) {
      const T v = reduceElem<T, Fn>(fn, hasFifoIn, f[k], hasUserIn, u[k], pre, preIn, post);
      if (userOut != nullptr) userOut[base + k * 32] = v;
      if (fifoOut != nullptr) fifoOut[base + k * 32] = v;
    }
  }
  for (int64_t i = fullEnd + tid; i < end; i += nthreads) {
    const T v = reduceElem<T, Fn>(fn, hasFifoIn, hasFifoIn ? fifoIn[i] : T(), hasUserIn, hasUserIn ? userIn[i] : T(),
                                  pre, preIn, post);
    if (userOut != nullptr) userOut[i] = v;
    if (fifoOut != nullptr) fifoOut[i] = v;
  }
}

// The last few elements [begin, end) (fewer than one 16-byte pack's), one per thread: not unrolled,
// so that each (T, Fn) carries one small loop for them.
template <typename T, typename Fn>
__device__ __forceinline__ void reduceCopyTail(const Fn& fn, int tid, int nthreads, const T* fifoIn, const T* userIn,
                                               T* userOut, T* fifoOut, int64_t begin, int64_t end, bool pre, bool preIn,
                                               bool post) {
  const bool hasFifoIn = fifoIn != nullptr;
  const bool hasUserIn = userIn != nullptr;
  for (int64_t i = begin + tid; i < end; i += nthreads) {
    const T v = reduceElem<T, Fn>(fn, hasFifoIn, hasFifoIn ? fifoIn[i] : T(), hasUserIn, hasUserIn ? userIn[i] : T(),
                                  pre, preIn, post);
    if (userOut != nullptr) userOut[i] = v;
    if (fifoOut != nullptr) fifoOut[i] = v;
  }
}

// copyWords' words: the same for every element type, so not inlined (one copy per word size).
template <typename W>
__device__ __noinline__ void copyWordRange(int tid, int nthreads, const W* fifoIn, const W* userIn, W* userOut,
                                           W* fifoOut, int64_t words) {
  reduceCopyElems<W, FuncSum<W>>(FuncSum<W>(), tid, nthreads, fifoIn, userIn, userOut, fifoOut, 0, words, false, false,
                                 false);
}

// A copy (one source, no pre- or post-op) of elements narrower than the alignment every pointer
// has: the bytes move unchanged in words of W bytes, then the tail as elements. A point-to-point
// operation moves bytes, so a buffer at a 4-byte offset goes by 4-byte words, not byte by byte.
template <typename W, typename T, typename Fn>
__device__ __forceinline__ void copyWords(const Fn& fn, int tid, int nthreads, const T* fifoIn, const T* userIn,
                                          T* userOut, T* fifoOut, int64_t nelem) {
  const int64_t words = nelem * static_cast<int64_t>(sizeof(T)) / static_cast<int64_t>(sizeof(W));
  copyWordRange<W>(tid, nthreads, reinterpret_cast<const W*>(fifoIn), reinterpret_cast<const W*>(userIn),
                   reinterpret_cast<W*>(userOut), reinterpret_cast<W*>(fifoOut), words);
  const int64_t done = words * static_cast<int64_t>(sizeof(W) / sizeof(T));
  reduceCopyTail<T, Fn>(fn, tid, nthreads, fifoIn, userIn, userOut, fifoOut, done, nelem, false, false, false);
}

template <typename T, typename Fn>
__device__ __forceinline__ void simpleReduceCopy(const Fn& fn, int tid, int nthreads, const T* fifoIn, const T* userIn,
                                                 T* userOut, T* fifoOut, int64_t nelem, bool pre, bool preIn,
                                                 bool post) {
  // FIFO slots are aligned, but with registered buffers fifoIn / fifoOut are user buffers too.
  const uintptr_t userBits = reinterpret_cast<uintptr_t>(userIn) | reinterpret_cast<uintptr_t>(userOut) |
                             reinterpret_cast<uintptr_t>(fifoIn) | reinterpret_cast<uintptr_t>(fifoOut);
  if (userBits % 16 == 0) {
    const int64_t nPacks = nelem * static_cast<int64_t>(sizeof(T)) / 16;
    reduceCopyPacks<T, Fn>(fn, tid, nthreads, reinterpret_cast<const uint4*>(fifoIn),
                           reinterpret_cast<const uint4*>(userIn), reinterpret_cast<uint4*>(userOut),
                           reinterpret_cast<uint4*>(fifoOut), nPacks, pre, preIn, post);
    const int64_t vecElems = nPacks * 16 / static_cast<int64_t>(sizeof(T));
    reduceCopyTail<T, Fn>(fn, tid, nthreads, fifoIn, userIn, userOut, fifoOut, vecElems, nelem, pre, preIn, post);
    return;
  }
  const bool copyOnly =
      (fifoIn == nullptr || userIn == nullptr) && !(Fn::kHasPreOp && (pre || preIn)) && !(Fn::kHasPostOp && post);
  if (copyOnly && sizeof(T) < 8 && userBits % 8 == 0) {
    copyWords<uint64_t, T, Fn>(fn, tid, nthreads, fifoIn, userIn, userOut, fifoOut, nelem);
  } else if (copyOnly && sizeof(T) < 4 && userBits % 4 == 0) {
    copyWords<uint32_t, T, Fn>(fn, tid, nthreads, fifoIn, userIn, userOut, fifoOut, nelem);
  } else {
    reduceCopyElems<T, Fn>(fn, tid, nthreads, fifoIn, userIn, userOut, fifoOut, 0, nelem, pre, preIn, post);
  }
}

__device__ __forceinline__ void simpleWait(ProtoState& s, bool recv, bool send) {
  if (recv) {
    while (ldAcquireSys(s.recvTail) < s.recvStep + 1) {
      if (s.abort.poll()) return;
    }
  }
  if (send) {
    while (ldAcquireSys(s.sendHead) + kFifoSlotsSimple < s.sendStep + 1) {
      if (s.abort.poll()) return;
    }
  }
}

__device__ __forceinline__ int64_t simpleChunkBytes(const DevComm& comm, uint32_t requested) {
  return clampChunkBytes(comm.slotBytes[kProtoSimple], requested);
}

// kStepEnter (see StepFlags), counted as one step on both connections: the receive side is
// consumed at once (its head post tells the previous rank we are in), the send side waits until
// the next rank's head says it is in too. No payload moves. A point-to-point CTA has one of the two.
__device__ __forceinline__ void simpleEnter(ProtoState& s) {
  const bool recv = s.recvConn != nullptr;
  const bool send = s.sendConn != nullptr;
  if (recv) s.recvStep++;
  if (send) s.sendStep++;
  if (s.tid == 0 && !s.abort.aborted()) {
    if (recv) stReleaseCta(&s.shared->recvDone, s.recvStep);
    while (send && ldAcquireSys(s.sendHead) < s.sendStep) {
      if (s.abort.poll()) break;
    }
    if (send) stReleaseCta(&s.shared->sendDone, s.sendStep);
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
}

// kStepDrain (see StepFlags): wait until the next rank has consumed every step sent to it.
__device__ __forceinline__ void simpleDrain(ProtoState& s) {
  if (s.tid == 0 && s.sendConn != nullptr && !s.abort.aborted()) {
    while (ldAcquireSys(s.sendHead) < s.sendStep) {
      if (s.abort.poll()) break;
    }
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
}

// One Simple step on the workers (see the header comment). Not inlined: one copy per (T, Fn).
template <typename T, typename Fn>
__device__ __noinline__ void simpleStep(ProtoState& s, const char* src, char* dst, int64_t nelem, int flags) {
  if ((flags & kStepEnter) != 0) {
    simpleEnter(s);
    return;
  }
  if ((flags & kStepDrain) != 0) {
    simpleDrain(s);
    return;
  }
  if (nelem <= 0) return;
  const bool recv = (flags & kStepRecv) != 0;
  const bool send = (flags & kStepSend) != 0;
  const bool directIn = recv && (flags & kStepDirectRecv) != 0;
  const bool directOut = send && (flags & kStepDirectSend) != 0;
  const bool readIn = recv && (flags & kStepReadRecv) != 0;
  const bool readOut = send && (flags & kStepReadSend) != 0;  // no slot used: nothing to wait for
  const bool viaSlot = send && !directOut && !readOut;
  if (s.tid == 0 && !s.abort.aborted()) {
    simpleWait(s, recv, viaSlot);
    // NET: the step's bytes for the proxy; the poster's fence before the tail publishes them with the payload.
    if (viaSlot && s.sendSizes != nullptr) {
      *reinterpret_cast<volatile uint32_t*>(&s.sendSizes[s.sendStep % kNetSizeSlots]) =
          static_cast<uint32_t>(nelem * static_cast<int64_t>(sizeof(T)));
    }
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  if (!s.abort.aborted()) {
    const T* fifoIn = nullptr;
    if (directIn) {
      fifoIn = reinterpret_cast<const T*>(dst);
    } else if (readIn) {
      fifoIn = reinterpret_cast<const T*>(src + s.directDelta);
    } else if (recv) {
      fifoIn = reinterpret_cast<const T*>(s.recvBuff + (s.recvStep % kFifoSlotsSimple) * s.slotBytes);
    }
    T* fifoOut = nullptr;
    if (send && !readOut) {
      fifoOut = directOut ? reinterpret_cast<T*>(dst + s.directDelta)
                          : reinterpret_cast<T*>(s.sendBuff + (s.sendStep % kFifoSlotsSimple) * s.slotBytes);
    }
    // directIn: already in place; point-to-point directOut: dst is the peer's buffer, fifoOut.
    T* userOut = directIn || (directOut && s.directDelta == 0) ? nullptr : reinterpret_cast<T*>(dst);
    if (userOut != nullptr || fifoOut != nullptr) {
      const Fn fn(s.scalar);
      const bool pre = (flags & kStepPreOp) != 0;
      simpleReduceCopy<T, Fn>(fn, s.tid, s.nthreads, fifoIn, reinterpret_cast<const T*>(src), userOut, fifoOut, nelem,
                              pre, pre && readIn, (flags & kStepPostOp) != 0);
    }
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  if (send) s.sendStep++;
  if (recv) s.recvStep++;
  if (s.tid != 0) return;
  if (!s.postInline) {
    if (send) stReleaseCta(&s.shared->sendDone, s.sendStep);
    if (recv) stReleaseCta(&s.shared->recvDone, s.recvStep);
  } else if (!s.abort.aborted()) {
    // The poster's publication (simplePosterLoop), by worker 0 after the barrier.
    if (viaSlot) {
      fenceAcqRelSys();
      stRelaxedSys(s.sendConn->tail, s.sendStep);
    }
    if (recv) stRelaxedSys(s.recvHead, s.recvStep);
  }
}

// The poster warp of a Simple CTA (only its lane 0 calls this). See the header comment. The initial
// steps are read before the CTA's first barrier: the workers may finish and write the steps back
// before the poster starts. Either connection may be null (a point-to-point CTA moves one direction).
__device__ __forceinline__ void simplePosterLoop(const volatile int* abortFlag, DevSendConn* send, DevRecvConn* recv,
                                                 PrimsShared* shared, uint64_t postedTail, uint64_t postedHead) {
  uint64_t* tail = send != nullptr ? send->tail : nullptr;
  uint64_t* head = recv != nullptr ? recv->head : nullptr;
  AbortWatch abort(abortFlag, shared);
  while (true) {
    const uint64_t finished = ldAcquireCta(&shared->finished);
    const uint64_t sendDone = ldAcquireCta(&shared->sendDone);
    const uint64_t recvDone = ldAcquireCta(&shared->recvDone);
    if (sendDone != postedTail) {
      fenceAcqRelSys();
      stRelaxedSys(tail, sendDone);
      postedTail = sendDone;
    }
    if (recvDone != postedHead) {
      stRelaxedSys(head, recvDone);
      postedHead = recvDone;
    }
    if (finished != 0 || abort.poll()) return;
  }
}

// The start of every Simple CTA (collective or point-to-point): sets up the shared counters, then
// lane 0 of the extra warp runs the poster loop. Returns true on the workers (threads below
// nWorkers), false on the poster warp once it is done. The steps are read before the barrier: the
// workers may finish and write them back before the poster starts.
__device__ __forceinline__ bool simpleCtaStart(const volatile int* abortFlag, DevSendConn* send, DevRecvConn* recv,
                                               PrimsShared* shared, int nWorkers, bool sharedSteps) {
  const uint64_t sendStep = send != nullptr ? loadSendSteps(send, sharedSteps).step : 0;
  const uint64_t recvStep = recv != nullptr ? loadRecvStep(recv, sharedSteps) : 0;
  if (threadIdx.x == 0) {
    shared->sendDone = sendStep;
    shared->recvDone = recvStep;
    shared->finished = 0;
    shared->aborted = 0;
  }
  __syncthreads();
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < nWorkers) return true;
  if (tid == nWorkers) simplePosterLoop(abortFlag, send, recv, shared, sendStep, recvStep);
  return false;
}

}  // namespace braid
