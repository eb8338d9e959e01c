/*
 * nccl_device/lsa_barrier.h -- barriers among the ranks of an LSA team, through their memory.
 *
 *   ncclLsaBarrierSession<Coop> bar(coop, devComm, team, handle, index);  // or (coop, devComm,
 *   bar.sync(coop, cuda::memory_order_acq_rel);                            //  ncclTeamTagLsa(), index)
 *
 * A session is one use of barrier `index` (0 <= index < handle.nBarriers) of a barrier set by the
 * whole cooperative group `coop`; every member of `team` must run the same sequence of sessions on
 * the same index, and two sessions on one index must not be live at once on one rank. arrive()
 * tells the team the caller has come, wait() returns once every team member has arrived, sync() is
 * both. The memory order says what a barrier orders: its release part (release, acq_rel, seq_cst)
 * makes the group's writes before arrive() visible to peers that return from their wait(); its
 * acquire part makes peers' writes before their arrive() visible after the caller's wait();
 * relaxed orders nothing but the meeting itself.
 *
 * Waits watch the communicator's abort flag (devComm.abortFlag) and give up once it is set. The
 * forms with timeoutCycles (clock64 cycles) return ncclTimeout when the time runs out before the
 * team has arrived -- or when the communicator is aborted first, where NCCL's timed waits would keep
 * waiting -- and ncclSuccess otherwise.
 *
 * The barrier set's memory, one buffer per rank in the resource window (ncclLsaBarrierCreateRequirement
 * sizes it; the library zeroes it), in 32-bit words, for n = handle.nBarriers and N = team.nRanks:
 *   [0, n)             epoch of barrier i's multicast sessions, kept between sessions
 *   [n, 2n)            epoch of barrier i's unicast sessions, kept between sessions
 *   [2n, 3n)           barrier i's arrival counter, incremented through multicast by each rank
 *   [3n + i*N + r]     barrier i's inbox for team rank r: r stores its epoch + 1 there on arrival
 * This is NCCL's layout, so that one device communicator serves kernels built against either header.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_LSA_BARRIER_H_
#define NCCL_DEVICE_LSA_BARRIER_H_

#include "core.h"

#ifdef __CUDACC__
namespace nccl {
namespace detail {

/* Spins until the 32-bit counter at `word` reaches `target` (rolling comparison), loading it with
 * `order`. Returns true once it has; false when timed and the time ran out, or when the
 * communicator was aborted. */
template <bool kTimed>
NCCL_DEVICE_INLINE bool waitCounter(uint32_t* word, uint32_t target, cuda::memory_order order, uint32_t* abortFlag,
                                    uint64_t startCycle, uint64_t timeoutCycles, uint32_t& spins) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> counter(*word);
  NVCC_PRAGMA_UNROLL_DISABLED
  while (!nccl::utility::rollingLessEq(target, counter.load(order))) {
    if (kTimed && uint64_t(clock64()) - startCycle >= timeoutCycles) return false;
    if (nccl::utility::testAbort(abortFlag, spins)) return false;
  }
  return true;
}

}  // namespace detail
}  // namespace nccl

template <typename Coop>
struct ncclLsaBarrierSession_internal {
  Coop coop;
  ncclDevComm const& comm;
  ncclTeam team;
  ncclLsaBarrierHandle handle;
  int index;
  bool multimem;
  ncclMultimemHandle mmHandle;
  uint32_t epoch; /* arrivals completed on this barrier: unicast +1, multicast +team.nRanks each */

  /* The caller's barrier buffer, and the words of it described at the top of this file. */
  NCCL_DEVICE_INLINE uint32_t* localBuffer() const {
    return static_cast<uint32_t*>(ncclGetResourceBufferLocalPointer(comm, handle.bufHandle));
  }
  NCCL_DEVICE_INLINE uint32_t* savedEpoch() const { return localBuffer() + (multimem ? 0 : handle.nBarriers) + index; }
  NCCL_DEVICE_INLINE uint32_t* counterLocal() const { return localBuffer() + 2 * handle.nBarriers + index; }
  NCCL_DEVICE_INLINE uint32_t* counterMulticast() const {
    void* buf = ncclGetResourceBufferMultimemPointer(comm, handle.bufHandle, mmHandle);
    return static_cast<uint32_t*>(buf) + 2 * handle.nBarriers + index;
  }
  /* In team rank `owner`'s buffer, the inbox that team rank `from` stores to. */
  NCCL_DEVICE_INLINE uint32_t* inbox(int owner, int from) const {
    uint32_t* buf = static_cast<uint32_t*>(ncclGetResourceBufferPeerPointer(comm, handle.bufHandle, team, owner));
    return buf + 3 * handle.nBarriers + index * team.nRanks + from;
  }

  NCCL_DEVICE_INLINE void arriveImpl(cuda::memory_order order);
  template <bool kTimed>
  NCCL_DEVICE_INLINE ncclResult_t waitImpl(cuda::memory_order order, uint64_t timeoutCycles);
};

template <typename Coop>
struct ncclLsaBarrierSession : ncclLsaBarrierSession_internal<Coop> {
  NCCL_DEVICE_INLINE ncclLsaBarrierSession(Coop coop, ncclDevComm const& comm, ncclTeam team,
                                           ncclLsaBarrierHandle handle, uint32_t index, bool multimem = false,
                                           ncclMultimemHandle mmHandle = {})
      : ncclLsaBarrierSession_internal<Coop>{coop, comm, team, handle, int(index), multimem, mmHandle, 0} {
    if (multimem && mmHandle.mcBasePtr == nullptr) nccl::detail::unavailable("a multimem LSA barrier (no multicast)");
    this->epoch = *this->savedEpoch();
  }
  /* Barrier `index` of the communicator's own LSA barrier set (lsaBarrierCount barriers). */
  NCCL_DEVICE_INLINE ncclLsaBarrierSession(Coop coop, ncclDevComm const& comm, ncclTeamTagLsa, uint32_t index,
                                           bool multimem = false)
      : ncclLsaBarrierSession(coop, comm, ncclTeamLsa(comm), comm.lsaBarrier, index, multimem, comm.lsaMultimem) {}

  /* Saves the epoch for the next session on this barrier. */
  NCCL_DEVICE_INLINE ~ncclLsaBarrierSession() {
    if (this->coop.thread_rank() == 0) *this->savedEpoch() = this->epoch;
    this->coop.sync();
  }

  ncclLsaBarrierSession(ncclLsaBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE void arrive(Coop, cuda::memory_order order) { this->arriveImpl(order); }
  NCCL_DEVICE_INLINE void wait(Coop, cuda::memory_order order) { (void)this->template waitImpl<false>(order, 0); }
  NCCL_DEVICE_INLINE void sync(Coop coop, cuda::memory_order order) {
    arrive(coop, order);
    wait(coop, order);
  }
  NCCL_DEVICE_INLINE ncclResult_t wait(Coop, cuda::memory_order order, uint64_t timeoutCycles) {
    return this->template waitImpl<true>(order, timeoutCycles);
  }
  NCCL_DEVICE_INLINE ncclResult_t sync(Coop coop, cuda::memory_order order, uint64_t timeoutCycles) {
    arrive(coop, order);
    return wait(coop, order, timeoutCycles);
  }
};

template <typename Coop>
NCCL_DEVICE_INLINE void ncclLsaBarrierSession_internal<Coop>::arriveImpl(cuda::memory_order order) {
  /* Every thread of the group is done with what it wrote before arriving... */
  coop.sync();
  cuda::memory_order release = nccl::utility::releaseOrderOf(order);
  if (multimem) {
#if __CUDA_ARCH__ >= 900
    /* ...and one add through the multicast address reaches every rank's counter. The release
     * is cumulative over what the group's sync made visible to this thread. */
    if (coop.thread_rank() == 0) {
      uint32_t* counter = counterMulticast();
      if (release != cuda::memory_order_relaxed) {
        asm volatile("multimem.red.release.sys.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
      } else {
        asm volatile("multimem.red.relaxed.sys.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
      }
    }
#else
    nccl::detail::unavailable("multimem (it needs sm_90 or later)");
#endif
    return;
  }
  /* ...then a system-scope fence orders it before the stores into the peers' inboxes. */
  if (team.nRanks > 1 && release != cuda::memory_order_relaxed) cuda::atomic_thread_fence(release);
  NVCC_PRAGMA_UNROLL_DISABLED
  for (int i = coop.thread_rank(); i < team.nRanks - 1; i += coop.size()) {
    int peer = i < team.rank ? i : i + 1;
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system>{*inbox(peer, team.rank)}.store(epoch + 1,
                                                                                         cuda::memory_order_relaxed);
  }
}

template <typename Coop>
template <bool kTimed>
NCCL_DEVICE_INLINE ncclResult_t ncclLsaBarrierSession_internal<Coop>::waitImpl(cuda::memory_order order,
                                                                               uint64_t timeoutCycles) {
  cuda::memory_order acquire = nccl::utility::acquireOrderOf(order);
  uint64_t start = kTimed ? uint64_t(clock64()) : 0;
  uint32_t spins = 0;
  bool arrived = true;
  if (multimem) {
    /* One thread watches the counter every rank adds to; the group's sync below passes it on. */
    if (coop.thread_rank() == 0) {
      uint32_t target = epoch + uint32_t(team.nRanks);
      arrived = nccl::detail::waitCounter<kTimed>(counterLocal(), target, acquire, comm.abortFlag, start, timeoutCycles,
                                                  spins);
      if (arrived || !kTimed) epoch = target;
    }
  } else {
    /* Each thread watches the inboxes of its share of the peers. */
    uint32_t target = epoch + 1;
    NVCC_PRAGMA_UNROLL_DISABLED
    for (int i = coop.thread_rank(); i < team.nRanks - 1 && arrived; i += coop.size()) {
      int peer = i < team.rank ? i : i + 1;
      arrived = nccl::detail::waitCounter<kTimed>(inbox(team.rank, peer), target, acquire, comm.abortFlag, start,
                                                  timeoutCycles, spins);
    }
    if (arrived || !kTimed) epoch = target;
  }
  coop.sync();
  return arrived ? ncclSuccess : ncclTimeout;
}
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_LSA_BARRIER_H_ */
