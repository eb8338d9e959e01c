/*
 * gin_api_compile.cu -- every form of the GIN device API (nccl_device/gin.h, gin_barrier.h)
 * instantiated once, with each cooperative group kind, so that the header is known to compile for
 * all of them. The kernel is never launched: gin_kernels.cu's kernels are the ones that run.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#include <nccl_device.h>

namespace {

template <typename Coop>
__device__ void everyPut(ncclGin const& gin, Coop coop, ncclWindow_t w, ncclGinDescriptorSmem* smem) {
  ncclTeam world = ncclTeamWorld(gin.comm);
  ncclSymPtr<float> sym(w, 64);
  gin.put(world, 1, w, 0, w, 8, 16);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_SignalInc{1}, ncclGin_CounterInc{2}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_StrongSignalInc{1}, ncclGin_WeakCounterInc{2}, coop,
          ncclGin_DescriptorSmem{smem});
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_WeakSignalInc{1}, ncclGin_None{}, coop, ncclGin_None{},
          cuda::thread_scope_system, cuda::thread_scope_device, ncclGinOptFlagsDefault, ncclGin_SegmentMixed{});
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_SignalAdd{1, 5}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_StrongSignalAdd{1, 5}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_WeakSignalAdd{1, 5}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_VASignalInc{w, 0}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_StrongVASignalInc{w, 0}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_WeakVASignalInc{w, 0}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_VASignalAdd{w, 0, 3}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_StrongVASignalAdd{w, 0, 3}, ncclGin_None{}, coop);
  gin.put(world, 1, w, 0, w, 8, 16, ncclGin_WeakVASignalAdd{w, 0, 3}, ncclGin_None{}, coop, ncclGin_None{},
          cuda::thread_scope_thread, cuda::thread_scope_device, ncclGinOptFlagsDefault, ncclGin_SegmentHostNuma{});
  gin.put(world, 1, sym, sym + 4, 4, ncclGin_SignalInc{0}, ncclGin_CounterInc{0}, coop);
  gin.putValue(world, 1, w, 0, uint8_t(1));
  gin.putValue(world, 1, w, 0, 2.5, ncclGin_SignalInc{0}, coop);
  gin.putValue(world, 1, w, 0, uint32_t(7), ncclGin_WeakVASignalAdd{w, 8, 2}, coop, ncclGin_DescriptorSmem{smem});
  gin.putValue(world, 1, sym, 1.5f, ncclGin_StrongSignalAdd{0, 9}, coop);
  gin.signal(world, 1, ncclGin_SignalInc{0}, coop);
  gin.signal(world, 1, ncclGin_VASignalAdd{w, 0, 4}, coop, ncclGin_None{}, cuda::thread_scope_system);
  gin.get(world, 1, w, 0, w, 64, 32, coop);
  gin.get(world, 1, w, 0, w, 64, 32, coop, ncclGin_DescriptorSmem{smem}, ncclGinOptFlagsDefault,
          ncclGin_SegmentMixed{});
}

template <typename Coop>
__device__ void everyWait(ncclGin const& gin, Coop coop, ncclWindow_t w, uint64_t* out) {
  ncclTeam world = ncclTeamWorld(gin.comm);
  ncclGinRequest_t req;
  gin.flushAsync(world, 1, &req, coop);
  gin.wait(req, coop);
  out[0] = gin.wait(req, coop, ncclGin_None{}, cuda::memory_order_acquire, 100);
  gin.flush(coop);
  out[1] = gin.flush(coop, cuda::memory_order_acquire, ncclGin_None{}, 100);
  out[2] = gin.readCounter(0) + gin.readCounter(1, 32, cuda::memory_order_relaxed);
  gin.waitCounter(coop, 0, 1);
  out[3] = gin.waitCounter(coop, 0, 1, 56, cuda::memory_order_acquire, 100);
  out[4] = gin.readSignal(0) + gin.readSignal(w, 8, 32);
  gin.waitSignal(coop, 0, 1);
  out[5] = gin.waitSignal(coop, 0, 1, 64, cuda::memory_order_acquire, 100);
  gin.waitSignal(coop, w, 8, 1);
  out[6] = gin.waitSignal(coop, w, 8, 1, 64, cuda::memory_order_acquire, 100);
  gin.increaseSignalShadow(0, 1);
  out[7] = *gin.getSignalShadowPtr(0);
  gin.waitSignalMeetShadow(coop, 0);
  uint32_t before32, delta32;
  gin.waitSignalFollowShadow(coop, 0, 1u, &before32, &delta32, 32);
  uint64_t before64, delta64;
  gin.waitSignalFollowShadow(coop, 0, uint64_t(1), &before64, &delta64);
  out[8] = before32 + delta32 + before64 + delta64;
  gin.resetCounter(0);
  gin.resetSignal(0);
  gin.resetSignal(w, 8);
  out[9] = gin._supportsStrongSignal() + gin._flushesAllPutsOnAnySignal() + gin._makeCtx().rank;
}

template <typename Coop>
__device__ void everyBarrier(ncclGin const& gin, Coop coop, uint64_t* out) {
  ncclDevComm const& comm = gin.comm;
  {
    ncclGinBarrierSession<Coop> bar(coop, gin, ncclTeamWorld(comm), comm.worldGinBarrier, 0);
    bar.sync(coop, cuda::memory_order_acq_rel);
    out[0] = bar.sync(coop, cuda::memory_order_relaxed, ncclGinFenceLevel::None, 100) + bar.signal + bar.index;
  }
  {
    ncclGinBarrierSession<Coop> bar(coop, gin, ncclTeamTagRail{}, 0);
    bar.sync(coop, cuda::memory_order_acquire, ncclGinFenceLevel::Put);
  }
  {
    ncclGinBarrierSession<Coop> bar(coop, ncclGinAllContexts(comm), ncclTeamTagWorld{}, 1);
    bar.sync(coop, cuda::memory_order_release, ncclGinFenceLevel::Get);
    out[1] = bar.sync(coop, cuda::memory_order_acq_rel, ncclGinFenceLevel::Put | ncclGinFenceLevel::Get, 100);
  }
  ncclGinBarrier(coop, gin, ncclTeamTagWorld{}, 0);
  ncclGinBarrier(coop, gin, ncclTeamTagRail{}, 0, cuda::memory_order_relaxed, ncclGinFenceLevel::None);
  ncclGinBarrier(coop, gin, ncclTeamWorld(comm), comm.worldGinBarrier, 0);
  ncclGinBarrier(coop, ncclGinAllContexts(comm), ncclTeamTagWorld{}, 0);
  ncclGinBarrier(coop, ncclGinAllContexts(comm), ncclTeamTagRail{}, 0);
  ncclGinBarrier(coop, ncclGinAllContexts(comm), ncclTeamRail(comm), comm.railGinBarrier, 0);
  // The hybrid barriers over GIN: world, rail, explicit teams, timed.
  {
    ncclBarrierSession<Coop> bar(coop, ncclTeamTagWorld{}, gin, 0);
    bar.sync(coop, cuda::memory_order_acq_rel, ncclGinFenceLevel::Put);
    out[2] = bar.sync(coop, cuda::memory_order_acq_rel, ncclGinFenceLevel::None, 100);
    out[3] = bar.lsaBarrier().index + bar.ginBarrier().index;
  }
  {
    ncclBarrierSession<Coop> bar(coop, ncclTeamLsa(comm), ncclTeamRail(comm), gin, comm.hybridLsaBarrier,
                                 comm.hybridRailGinBarrier, 0);
    bar.sync(coop, cuda::memory_order_acq_rel);
  }
  ncclBarrier(coop, ncclTeamTagWorld{}, gin, 0);
  ncclBarrier(coop, ncclTeamTagRail{}, gin, 0, cuda::memory_order_relaxed, ncclGinFenceLevel::None);
}

template <typename Coop>
__device__ void everything(ncclDevComm const& comm, Coop coop, ncclWindow_t w, uint64_t* out) {
  __shared__ ncclGinDescriptorSmem smem;
  ncclGin gin(comm, 1, NCCL_GIN_RESOURCE_SHARING_CTA);
  ncclGin_BackendOne<2> proxyOnly(comm, 0);
  everyPut(gin, coop, w, &smem);
  everyWait(gin, coop, w, out);
  everyBarrier(gin, coop, out + 10);
  proxyOnly.putValue(ncclTeamWorld(comm), 0, w, 0, 1);
}

__global__ void ginApiCompileKernel(ncclDevComm comm, ncclWindow_t w, uint64_t* out) {
  everything(comm, ncclCoopThread(), w, out);
  everything(comm, ncclCoopWarp(), w, out);
  everything(comm, ncclCoopTile<8>(), w, out);
  everything(comm, ncclCoopLanes(0xffu), w, out);
  everything(comm, ncclCoopWarpSpan(0, 2, 1), w, out);
  everything(comm, ncclCoopCta(), w, out);
  /* A type-erased group takes every call but waitSignalFollowShadow, which broadcasts (as NCCL's). */
  __shared__ ncclGinDescriptorSmem smem;
  ncclGin gin(comm, 0);
  everyPut(gin, ncclCoopAny(ncclCoopWarp()), w, &smem);
  ncclGinRequest_t req;
  gin.flushAsync(ncclTeamWorld(comm), 0, &req, ncclCoopAny(ncclCoopCta()));
  gin.wait(req, ncclCoopAny(ncclCoopCta()));
  gin.flush(ncclCoopAny(ncclCoopCta()));
  gin.waitSignal(ncclCoopAny(ncclCoopCta()), 0, 1);
  ncclGinBarrier(ncclCoopAny(ncclCoopCta()), gin, ncclTeamTagWorld{}, 0);
}

}  // namespace

/* Referenced so that the kernel is compiled and kept. */
void* braidGinApiCompileKernel() { return reinterpret_cast<void*>(&ginApiCompileKernel); }
