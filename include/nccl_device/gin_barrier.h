/*
 * nccl_device/gin_barrier.h -- barriers over GIN (ncclGinBarrierSession, ncclGinBarrier), and the
 * fence levels a barrier that spans GIN takes. Declared so that programs compile; like every GIN
 * call (nccl_device/gin.h) they stop the kernel, since this library provides no GIN connection.
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
  ncclTeam team;
  ncclGinBarrierHandle handle;
  int index;
};

template <typename Coop>
struct ncclGinBarrierSession : ncclGinBarrierSession_internal<Coop> {
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin, ncclTeam team, ncclGinBarrierHandle handle,
                                           uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{coop, team, handle, int(index)} {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin, ncclTeamTagRail, uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{coop, ncclTeam{}, ncclGinBarrierHandle{}, int(index)} {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGin, ncclTeamTagWorld, uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{coop, ncclTeam{}, ncclGinBarrierHandle{}, int(index)} {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGinAllContexts, ncclTeam team, ncclGinBarrierHandle handle,
                                           uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{coop, team, handle, int(index)} {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGinAllContexts, ncclTeamTagRail, uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{coop, ncclTeam{}, ncclGinBarrierHandle{}, int(index)} {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ncclGinBarrierSession(Coop coop, ncclGinAllContexts, ncclTeamTagWorld, uint32_t index)
      : ncclGinBarrierSession_internal<Coop>{coop, ncclTeam{}, ncclGinBarrierHandle{}, int(index)} {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ~ncclGinBarrierSession() {}
  ncclGinBarrierSession(ncclGinBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE void sync(Coop, cuda::memory_order,
                               ncclGinFenceLevel = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE ncclResult_t sync(Coop, cuda::memory_order, ncclGinFenceLevel, uint64_t) {
    nccl::detail::ginUnavailable();
    return ncclInvalidUsage;
  }
};

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
