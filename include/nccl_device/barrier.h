/*
 * nccl_device/barrier.h -- the hybrid barrier (ncclBarrierSession, ncclBarrier): an LSA barrier
 * among the caller's LSA team, joined where the team spans several LSA teams by a GIN barrier among
 * their rails. Its memory is the device communicator's hybrid barrier set (barrierCount barriers:
 * hybridLsaBarrier, plus hybridRailGinBarrier and hybridDenseGinBarrier on GIN).
 *
 * With this library only the LSA form works: ncclBarrierSession(coop, ncclTeamTagLsa(), devComm,
 * index) is an ncclLsaBarrierSession on devComm.hybridLsaBarrier. The forms that take an ncclGin
 * are not implemented and stop the kernel with a message; a program can compose the same barrier
 * from ncclLsaBarrierSession and ncclGinBarrierSession (nccl_device/gin_barrier.h).
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_BARRIER_H_
#define NCCL_DEVICE_BARRIER_H_

#include "core.h"
#include "gin.h"
#include "gin_barrier.h"
#include "lsa_barrier.h"

#ifdef __CUDACC__
namespace nccl {
namespace detail {
NCCL_DEVICE_INLINE void hybridGinBarrierUnavailable() {
  unavailable("the hybrid barrier over GIN (ncclBarrierSession or ncclBarrier with an ncclGin)");
}
}  // namespace detail
}  // namespace nccl

template <typename Coop>
struct ncclBarrierSession_internal {
  Coop coop;
  nccl::utility::Optional<ncclLsaBarrierSession<Coop>> innerLsaBar;
  nccl::utility::Optional<ncclGinBarrierSession<Coop>> outerGinBar;
};

template <typename Coop>
struct ncclBarrierSession : ncclBarrierSession_internal<Coop> {
  /* An LSA barrier within innerTeam and a GIN barrier across outerTeam. */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeam, ncclTeam, ncclGin, ncclLsaBarrierHandle,
                                        ncclGinBarrierHandle, uint32_t, bool = false, ncclMultimemHandle = {})
      : ncclBarrierSession_internal<Coop>{coop, nccl::utility::Absent(), nccl::utility::Absent()} {
    nccl::detail::hybridGinBarrierUnavailable();
  }
  /* Every rank of the communicator. */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagWorld, ncclGin, uint32_t, bool = false)
      : ncclBarrierSession_internal<Coop>{coop, nccl::utility::Absent(), nccl::utility::Absent()} {
    nccl::detail::hybridGinBarrierUnavailable();
  }
  /* The caller's LSA team, on barrier `index` of the hybrid barrier set. */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagLsa, ncclDevComm const& comm, uint32_t index,
                                        bool multimem = false)
      : ncclBarrierSession_internal<Coop>{coop,
                                          nccl::utility::present(coop, comm, ncclTeamLsa(comm), comm.hybridLsaBarrier,
                                                                 index, multimem, comm.lsaMultimem),
                                          nccl::utility::Absent()} {}
  /* The caller's rail team (over GIN). */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagRail, ncclGin, uint32_t)
      : ncclBarrierSession_internal<Coop>{coop, nccl::utility::Absent(), nccl::utility::Absent()} {
    nccl::detail::hybridGinBarrierUnavailable();
  }
  ncclBarrierSession(ncclBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE ncclLsaBarrierSession<Coop>& lsaBarrier() { return this->innerLsaBar.thing; }
  NCCL_DEVICE_INLINE ncclGinBarrierSession<Coop>& ginBarrier() { return this->outerGinBar.thing; }

  NCCL_DEVICE_INLINE void sync(Coop coop, cuda::memory_order order,
                               ncclGinFenceLevel = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    if (this->innerLsaBar.present) this->innerLsaBar.thing.sync(coop, order);
  }
  NCCL_DEVICE_INLINE ncclResult_t sync(Coop coop, cuda::memory_order order, ncclGinFenceLevel, uint64_t timeoutCycles) {
    if (!this->innerLsaBar.present) return ncclSuccess;
    return this->innerLsaBar.thing.sync(coop, order, timeoutCycles);
  }
};

/* One-shot hybrid barriers: a session built, synced and ended. */
template <typename Coop>
NCCL_DEVICE_INLINE void ncclBarrier(Coop coop, ncclTeamTagWorld tag, ncclGin gin, uint32_t index,
                                    cuda::memory_order order = cuda::memory_order_acq_rel,
                                    ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get,
                                    bool multimem = false) {
  ncclBarrierSession<Coop> session(coop, tag, gin, index, multimem);
  session.sync(coop, order, fence);
}
template <typename Coop>
NCCL_DEVICE_INLINE void ncclBarrier(Coop coop, ncclTeamTagRail tag, ncclGin gin, uint32_t index,
                                    cuda::memory_order order = cuda::memory_order_acq_rel,
                                    ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
  ncclBarrierSession<Coop> session(coop, tag, gin, index);
  session.sync(coop, order, fence);
}
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_BARRIER_H_ */
