/*
 * nccl_device/gin_barrier.h -- barriers over GIN (ncclGinBarrierSession, ncclGinBarrier), and the
 * fence levels a barrier that spans GIN takes.
 *
 *   ncclGinBarrierSession<Coop> bar(coop, gin, ncclTeamTagWorld(), index);  // or (coop, gin, team,
 *   bar.sync(coop, cuda::memory_order_acq_rel, ncclGinFenceLevel::Put);      //  handle, index)
 *
 * A barrier set (ncclGinBarrierCreateRequirement, or the communicator's railGinBarrier and
 * worldGinBarrier) is nBarriers * team.nRanks GIN signals from handle.signal0 on, barrier i's
 * slot for team rank r being signal0 + i * team.nRanks + r. Each member raises its slot on every
 * other member (SignalInc) and waits until each member's slot has been raised once more than the
 * 32-bit signal shadow of that slot counted: the shadows carry the count from one session to the
 * next, so every member must run the same sequence of sessions on one index, one at a time. This
 * is NCCL's scheme, so that kernels compiled against either header meet in one barrier.
 *
 * A timed sync returns ncclTimeout when the team has not met within timeoutCycles (or the
 * communicator was aborted first), and its Get flush is timed too.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_GIN_BARRIER_H_
#define NCCL_DEVICE_GIN_BARRIER_H_

#include "core.h"
#include "gin.h"

#ifdef __CUDACC__
/* What a barrier that spans GIN also guarantees, as bits. Put: puts that team members issued to
 * the caller before the barrier are visible in the caller's memory after it. Get: the caller's gets
 * issued before the barrier have landed. None (Relaxed, its older name): the meeting only. The
 * enumerators are unscoped, as NCCL's are, so both ncclGinFenceLevel::Put and Put compile. */
enum ncclGinFenceLevel : uint32_t {
  None = 0,
  Put = 1u << 0,
  Get = 1u << 1,
  Relaxed = None,
};
NCCL_HOST_DEVICE_INLINE constexpr ncclGinFenceLevel operator|(ncclGinFenceLevel a, ncclGinFenceLevel b) {
  return ncclGinFenceLevel(uint32_t(a) | uint32_t(b));
}
NCCL_HOST_DEVICE_INLINE constexpr ncclGinFenceLevel operator&(ncclGinFenceLevel a, ncclGinFenceLevel b) {
  return ncclGinFenceLevel(uint32_t(a) & uint32_t(b));
}

/* In place of an ncclGin: the barrier's fence covers every GIN context of the communicator. */
struct ncclGinAllContexts {
  ncclDevComm const& comm;
  NCCL_HOST_DEVICE_INLINE constexpr ncclGinAllContexts(ncclDevComm const& comm_) : comm(comm_) {}
};

template <typename Coop>
struct ncclGinBarrierSession_internal {
  Coop coop;
  ncclGin net;
  ncclTeam team;
  ncclGinBarrierHandle handle;
  int index;
  ncclGinSignal_t signal; /* this barrier's first signal: team rank r raises signal + r */
  bool fenceAllContexts;  /* the fence covers every GIN context of the communicator, not net's */

  /* Everything the context(s) issued carried out, each thread of the group taking a share of the
   * (context, peer) pairs: net's context to every GIN rank, or every context to every team member.
   * No sync of the group inside, so that threads may leave early on a timeout. */
  template <bool kTimed>
  NCCL_DEVICE_INLINE ncclResult_t flushAll(cuda::memory_order order, uint64_t startCycle, uint64_t timeoutCycles) {
    namespace proxy = nccl::detail::ginproxy;
    int nPeers = fenceAllContexts ? team.nRanks : net._ginRankOfWorld(net.comm.nRanks);
    int total = (fenceAllContexts ? int(net.comm.ginContextCount) : 1) * nPeers;
    ncclResult_t ret = ncclSuccess;
    NVCC_PRAGMA_UNROLL_DISABLED
    for (int i = coop.thread_rank(); i < total && ret == ncclSuccess; i += coop.size()) {
      ncclGin ctx = fenceAllContexts ? ncclGin(net.comm, i / nPeers, net.resourceSharingMode) : net;
      int peer = fenceAllContexts ? ctx._ginRank(team, i % nPeers) : i;
      uint64_t left = 0;
      if (kTimed) {
        uint64_t spent = uint64_t(clock64()) - startCycle;
        if (spent >= timeoutCycles) return ncclTimeout;
        left = timeoutCycles - spent;
      }
      ret = proxy::complete<kTimed>(ctx._proxyCtx(), ctx._ginRankOfWorld(net.comm.rank),
                                    proxy::requestFor(ctx._proxyCtx(), peer), order, net.comm.abortFlag, left);
    }
    return ret;
  }
  /* The step-th peer of the rotation that starts after the caller (and reaches itself last). */
  NCCL_DEVICE_INLINE int peerAt(int step) const {
    int peer = team.rank + 1 + step;
    return peer >= team.nRanks ? peer - team.nRanks : peer;
  }
  /* Waits until `peer` has arrived once more than the shadow of its slot counted, then counts it.
   * The slot's 32 low bits are compared, rolling. */
  template <bool kTimed>
  NCCL_DEVICE_INLINE ncclResult_t awaitPeer(ncclGin const& ctx, int peer, cuda::memory_order acquire,
                                            uint64_t startCycle, uint64_t timeoutCycles) {
    uint32_t* shadow = reinterpret_cast<uint32_t*>(ctx.getSignalShadowPtr(signal + peer));
    uint32_t target = ++*shadow;
    if (!kTimed) {
      ctx.waitSignal(ncclCoopThread{}, signal + peer, target, 32, acquire);
      return ncclSuccess;
    }
    uint32_t spins = 0;
    NVCC_PRAGMA_UNROLL_DISABLED
    while (!nccl::utility::rollingLessEq<uint64_t>(target, ctx.readSignal(signal + peer, 32, acquire), 32)) {
      if (uint64_t(clock64()) - startCycle >= timeoutCycles) return ncclTimeout;
      if (nccl::utility::testAbort(net.comm.abortFlag, spins)) return ncclTimeout;
    }
    return ncclSuccess;
  }
  template <bool kTimed>
  NCCL_DEVICE_INLINE ncclResult_t syncImpl(cuda::memory_order order, ncclGinFenceLevel fence, uint64_t timeoutCycles);
};

template <typename Coop>
struct ncclGinBarrierSession : ncclGinBarrierSession_internal<Coop> {
  /* Barrier `index` of the set `handle` made for `team`, over the context `net`. */
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin net, ncclTeam team, ncclGinBarrierHandle handle,
                                           uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{
            coop, net, team, handle, int(index), ncclGinSignal_t(handle.signal0 + index * team.nRanks), false} {}
  /* The communicator's own barrier sets for the rail and world teams. */
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin net, ncclTeamTagRail, uint32_t index)
      : ncclGinBarrierSession(coop, net, ncclTeamRail(net.comm), net.comm.railGinBarrier, index) {}
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin net, ncclTeamTagWorld, uint32_t index)
      : ncclGinBarrierSession(coop, net, ncclTeamWorld(net.comm), net.comm.worldGinBarrier, index) {}
  /* Signals on every context (a signal on one context does not follow puts on another), fences
   * over every context. */
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGinAllContexts all, ncclTeam team,
                                           ncclGinBarrierHandle handle, uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{
            coop, ncclGin(all.comm, 0), team, handle, int(index), ncclGinSignal_t(handle.signal0 + index * team.nRanks),
            true} {}
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGinAllContexts all, ncclTeamTagRail, uint32_t index)
      : ncclGinBarrierSession(coop, all, ncclTeamRail(all.comm), all.comm.railGinBarrier, index) {}
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGinAllContexts all, ncclTeamTagWorld, uint32_t index)
      : ncclGinBarrierSession(coop, all, ncclTeamWorld(all.comm), all.comm.worldGinBarrier, index) {}
  NCCL_DEVICE_INLINE ~ncclGinBarrierSession() {}
  ncclGinBarrierSession(ncclGinBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE void sync(Coop, cuda::memory_order order,
                               ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    (void)this->template syncImpl<false>(order, fence, 0);
  }
  NCCL_DEVICE_INLINE ncclResult_t sync(Coop, cuda::memory_order order, ncclGinFenceLevel fence,
                                       uint64_t timeoutCycles) {
    return this->template syncImpl<true>(order, fence, timeoutCycles);
  }
};

/* Each member signals every other one (and itself when the fence has Put, so that its puts to
 * itself are settled like the others') on its slot signal + rank, then waits for each of them on
 * theirs. A strong signal settles the puts before it, so Put needs no flush with the proxy; Get
 * flushes after the meeting, so that peers do not wait for this rank's gets. */
template <typename Coop>
template <bool kTimed>
NCCL_DEVICE_INLINE ncclResult_t ncclGinBarrierSession_internal<Coop>::syncImpl(cuda::memory_order order,
                                                                               ncclGinFenceLevel fence,
                                                                               uint64_t timeoutCycles) {
  cuda::memory_order acquire = nccl::utility::acquireOrderOf(order);
  /* What the group wrote is released by each signal's fence, unless nothing is to be released. */
  cuda::thread_scope given = nccl::utility::releaseOrderOf(order) != cuda::memory_order_relaxed
                                 ? cuda::thread_scope_thread
                                 : cuda::thread_scope_system;
  ncclResult_t ret = ncclSuccess;
  coop.sync();
  uint64_t start = kTimed ? uint64_t(clock64()) : 0;
  if ((fence & ncclGinFenceLevel::Put) && !net._supportsStrongSignal()) {
    ret = flushAll<kTimed>(acquire, start, timeoutCycles);
  }
  int nSignals = (fence & ncclGinFenceLevel::Put) ? team.nRanks : team.nRanks - 1;
  int nContexts = fenceAllContexts ? int(net.comm.ginContextCount) : 1;
  int total = nContexts * nSignals;
  NVCC_PRAGMA_UNROLL_DISABLED
  for (int i = coop.thread_rank(); i < total && ret == ncclSuccess; i += coop.size()) {
    ncclGin ctx = fenceAllContexts ? ncclGin(net.comm, i / nSignals, net.resourceSharingMode) : net;
    ctx.signal(team, peerAt(i % nSignals), ncclGin_SignalInc{ncclGinSignal_t(signal + team.rank)}, ncclCoopThread{},
               ncclGin_None{}, given);
  }
  NVCC_PRAGMA_UNROLL_DISABLED
  for (int i = coop.thread_rank(); i < total && ret == ncclSuccess; i += coop.size()) {
    ncclGin ctx = fenceAllContexts ? ncclGin(net.comm, i / nSignals, net.resourceSharingMode) : net;
    ret = awaitPeer<kTimed>(ctx, peerAt(i % nSignals), acquire, start, timeoutCycles);
  }
  if (ret == ncclSuccess && (fence & ncclGinFenceLevel::Get)) ret = flushAll<kTimed>(acquire, start, timeoutCycles);
  coop.sync();
  return ret;
}

/* One-shot GIN barriers: a session built, synced and ended. */
namespace nccl {
namespace detail {
template <typename Coop, typename GinOrAll, typename TeamOrTag>
NCCL_DEVICE_INLINE void ginBarrierOnce(Coop coop, GinOrAll gin, TeamOrTag team, uint32_t index,
                                       cuda::memory_order order, ncclGinFenceLevel fence) {
  ncclGinBarrierSession<Coop> session(coop, gin, team, index);
  session.sync(coop, order, fence);
}
}  // namespace detail
}  // namespace nccl
template <typename Coop>
NCCL_DEVICE_INLINE void ncclGinBarrier(Coop coop, ncclGin gin, ncclTeam team, ncclGinBarrierHandle handle,
                                       uint32_t index, cuda::memory_order order = cuda::memory_order_acq_rel,
                                       ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  ncclGinBarrierSession<Coop> session(coop, gin, team, handle, index);
  session.sync(coop, order, fence);
}
template <typename Coop>
NCCL_DEVICE_INLINE void ncclGinBarrier(Coop coop, ncclGin gin, ncclTeamTagRail tag, uint32_t index,
                                       cuda::memory_order order = cuda::memory_order_acq_rel,
                                       ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  nccl::detail::ginBarrierOnce(coop, gin, tag, index, order, fence);
}
template <typename Coop>
NCCL_DEVICE_INLINE void ncclGinBarrier(Coop coop, ncclGin gin, ncclTeamTagWorld tag, uint32_t index,
                                       cuda::memory_order order = cuda::memory_order_acq_rel,
                                       ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  nccl::detail::ginBarrierOnce(coop, gin, tag, index, order, fence);
}
template <typename Coop>
NCCL_DEVICE_INLINE void ncclGinBarrier(Coop coop, ncclGinAllContexts all, ncclTeam team, ncclGinBarrierHandle handle,
                                       uint32_t index, cuda::memory_order order = cuda::memory_order_acq_rel,
                                       ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  ncclGinBarrierSession<Coop> session(coop, all, team, handle, index);
  session.sync(coop, order, fence);
}
template <typename Coop>
NCCL_DEVICE_INLINE void ncclGinBarrier(Coop coop, ncclGinAllContexts all, ncclTeamTagRail tag, uint32_t index,
                                       cuda::memory_order order = cuda::memory_order_acq_rel,
                                       ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  nccl::detail::ginBarrierOnce(coop, all, tag, index, order, fence);
}
template <typename Coop>
NCCL_DEVICE_INLINE void ncclGinBarrier(Coop coop, ncclGinAllContexts all, ncclTeamTagWorld tag, uint32_t index,
                                       cuda::memory_order order = cuda::memory_order_acq_rel,
                                       ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  nccl::detail::ginBarrierOnce(coop, all, tag, index, order, fence);
}
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_GIN_BARRIER_H_ */
