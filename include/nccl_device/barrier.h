/*
 * nccl_device/barrier.h -- the hybrid barrier (ncclBarrierSession, ncclBarrier): an LSA barrier
 * among the caller's LSA team, joined across LSA teams by a GIN barrier. Its memory is the device
 * communicator's hybrid barrier set (barrierCount barriers: hybridLsaBarrier, and on GIN
 * hybridRailGinBarrier and hybridDenseGinBarrier).
 *
 *   ncclBarrierSession<ncclCoopCta> bar(coop, ncclTeamTagWorld(), gin, index);
 *   bar.sync(coop, cuda::memory_order_acq_rel, ncclGinFenceLevel::Put);
 *
 * How a world session meets, as NCCL 2.32 does it, so that kernels compiled against either header
 * meet alike:
 *   - without a Put fence, or where GIN connects only the rails: the LSA barrier, then the GIN
 *     barrier of the caller's rail. Every rail member arrives at the second only after its whole
 *     LSA team arrived at the first, so every rank has arrived when the caller leaves.
 *   - with a Put fence where GIN connects every rank (the proxy's connection): one GIN barrier of
 *     every GIN-connected rank (the dense set), whose signals settle each member's puts to the
 *     caller; a rail barrier would settle only puts along the rail.
 * The rail form is the rail GIN barrier alone; the LSA form the LSA barrier alone. The form with
 * explicit teams runs an LSA barrier among the inner team and then a GIN barrier among the outer
 * team, whose Put fence covers puts between members of the outer team.
 *
 * A timed sync runs every part even after one timed out (the group's threads do not agree on a
 * timeout, and each part ends with a group sync), then returns the first part's error.
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
template <typename Coop>
struct ncclBarrierSession_internal {
  Coop coop;
  nccl::utility::Optional<ncclGin> gin;
  nccl::utility::Optional<ncclLsaBarrierSession<Coop>> innerLsaBar;
  nccl::utility::Optional<ncclGinBarrierSession<Coop>> outerRailGinBar;
  nccl::utility::Optional<ncclGinBarrierSession<Coop>> outerDenseGinBar;
};

template <typename Coop>
struct ncclBarrierSession : ncclBarrierSession_internal<Coop> {
  /* An LSA barrier within innerTeam and a GIN barrier across outerTeam. */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeam innerTeam, ncclTeam outerTeam, ncclGin gin,
                                        ncclLsaBarrierHandle innerHandle, ncclGinBarrierHandle outerHandle,
                                        uint32_t index, bool multimem = false, ncclMultimemHandle innerMmHandle = {})
      : ncclBarrierSession_internal<Coop>{
            coop, nccl::utility::present(gin),
            nccl::utility::present(coop, gin.comm, innerTeam, innerHandle, index, multimem, innerMmHandle),
            nccl::utility::present(coop, gin, outerTeam, outerHandle, index), nccl::utility::Absent()} {}
  /* Every rank of the communicator. */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagWorld, ncclGin gin, uint32_t index, bool multimem = false)
      : ncclBarrierSession_internal<Coop>{
            coop, nccl::utility::present(gin),
            nccl::utility::present(coop, gin.comm, ncclTeamLsa(gin.comm), gin.comm.hybridLsaBarrier, index, multimem,
                                   gin.comm.lsaMultimem),
            nccl::utility::present(coop, gin, ncclTeamRail(gin.comm), gin.comm.hybridRailGinBarrier, index),
            nccl::utility::present(coop, gin, denseTeam(gin.comm), gin.comm.hybridDenseGinBarrier, index)} {}
  /* The caller's LSA team, on barrier `index` of the hybrid barrier set. */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagLsa, ncclDevComm const& comm, uint32_t index,
                                        bool multimem = false)
      : ncclBarrierSession_internal<Coop>{coop, nccl::utility::Absent(),
                                          nccl::utility::present(coop, comm, ncclTeamLsa(comm), comm.hybridLsaBarrier,
                                                                 index, multimem, comm.lsaMultimem),
                                          nccl::utility::Absent(), nccl::utility::Absent()} {}
  /* The caller's rail team (over GIN). */
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop coop, ncclTeamTagRail, ncclGin gin, uint32_t index)
      : ncclBarrierSession_internal<Coop>{
            coop, nccl::utility::present(gin), nccl::utility::Absent(),
            nccl::utility::present(coop, gin, ncclTeamRail(gin.comm), gin.comm.hybridRailGinBarrier, index),
            nccl::utility::Absent()} {}
  ncclBarrierSession(ncclBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE ncclLsaBarrierSession<Coop>& lsaBarrier() { return this->innerLsaBar.thing; }
  NCCL_DEVICE_INLINE ncclGinBarrierSession<Coop>& ginBarrier() { return this->outerRailGinBar.thing; }

  NCCL_DEVICE_INLINE void sync(Coop, cuda::memory_order order,
                               ncclGinFenceLevel fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    (void)syncParts<false>(order, fence, 0);
  }
  NCCL_DEVICE_INLINE ncclResult_t sync(Coop, cuda::memory_order order, ncclGinFenceLevel fence,
                                       uint64_t timeoutCycles) {
    return syncParts<true>(order, fence, timeoutCycles);
  }

 private:
  /* The ranks GIN connects the caller to, as a team: every rank ginContextStride apart. */
  static NCCL_DEVICE_INLINE ncclTeam denseTeam(ncclDevComm const& comm) {
    int stride = comm.ginContextStride > 0 ? int(comm.ginContextStride) : 1;
    return ncclTeam{comm.nRanks / stride, comm.rank / stride, stride};
  }
  struct Parts {
    bool lsa, rail, dense;
  };
  /* Which barriers meet (see the header comment). */
  NCCL_DEVICE_INLINE Parts parts(ncclGinFenceLevel fence) const {
    bool lsa = this->innerLsaBar.present;
    if (!this->gin.present) return Parts{lsa, false, false};
    if (!this->outerDenseGinBar.present) return Parts{lsa, this->outerRailGinBar.present, false};
    ncclDevComm const& comm = this->gin.thing.comm;
    bool wantPut = (fence & ncclGinFenceLevel::Put) != 0;
    if (!wantPut || int(comm.ginContextStride) == ncclTeamRail(comm).stride) return Parts{lsa, true, false};
    if (comm.ginContextStride == 1) return Parts{false, false, true};
    return Parts{lsa, false, true};
  }
  template <bool kTimed>
  NCCL_DEVICE_INLINE ncclResult_t syncParts(cuda::memory_order order, ncclGinFenceLevel fence, uint64_t timeoutCycles) {
    Parts p = parts(fence);
    bool ginAfter = p.rail || p.dense;
    cuda::memory_order lsaOrder = ginAfter ? nccl::utility::releaseOrderOf(order) : order;
    cuda::memory_order ginOrder = p.lsa ? nccl::utility::acquireOrderOf(order) : order;
    ncclResult_t lsaResult = ncclSuccess, ginResult = ncclSuccess;
    if (p.lsa) {
      if (kTimed) {
        uint64_t start = uint64_t(clock64());
        lsaResult = this->innerLsaBar.thing.sync(this->coop, lsaOrder, timeoutCycles);
        uint64_t spent = uint64_t(clock64()) - start;
        timeoutCycles -= spent < timeoutCycles ? spent : timeoutCycles;
      } else {
        this->innerLsaBar.thing.sync(this->coop, lsaOrder);
      }
    }
    ncclGinBarrierSession<Coop>* outer = p.rail ? &this->outerRailGinBar.thing : &this->outerDenseGinBar.thing;
    if (ginAfter) {
      if (kTimed) {
        ginResult = outer->sync(this->coop, ginOrder, fence, timeoutCycles);
      } else {
        outer->sync(this->coop, ginOrder, fence);
      }
    }
    return lsaResult != ncclSuccess ? lsaResult : ginResult;
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
