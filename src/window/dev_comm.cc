// Device communicators (ncclDevCommCreate / ncclDevCommDestroy): one resource window each, holding
// the barriers and buffers the program asked for, zeroed before any peer maps it and registered like
// a window, so that every LSA peer reaches it through the flat range at the same offsets.
//
// Message order, the same on every rank: one allGather of every rank's outcome of reading its
// requirements and laying out its buffers (all fail together, or all asked for the same bytes),
// then the collective registration of the resource window (registrar.cc).
#include <cstring>
#include <vector>

#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/log.h"
#include "window/manager.h"
#include "window/support.h"
#include "window/window_registry.h"

namespace braid::window {
namespace {

struct ResourceVote {
  int32_t status;
  int32_t reserved;
  uint64_t bytes;
};
static_assert(sizeof(ResourceVote) == 16, "ResourceVote crosses process boundaries: keep it fixed");

}  // namespace

ncclResult_t Manager::agreeOnResources(ncclResult_t mine, uint64_t bytes) {
  std::vector<ResourceVote> votes(ctx_.nranks, ResourceVote{0, 0, 0});
  votes[ctx_.rank] = ResourceVote{static_cast<int32_t>(mine), 0, bytes};
  NCCLCHECK(ctx_.bootstrap->allGather(votes.data(), sizeof(ResourceVote)));
  if (mine != ncclSuccess) return mine;  // its WARN is out
  for (int r = 0; r < ctx_.nranks; ++r) {
    if (votes[r].status != ncclSuccess) {
      WARN("ncclDevCommCreate: %s: rank %d refused the device communicator (its WARN says why)", ctx_.me().c_str(), r);
      return static_cast<ncclResult_t>(votes[r].status);
    }
    if (votes[r].bytes != bytes) {
      WARN(
          "ncclDevCommCreate: %s: rank %d asks for %llu bytes of device communicator resources, this rank for %llu: "
          "every rank must pass the same requirements",
          ctx_.me().c_str(), r, static_cast<unsigned long long>(votes[r].bytes),
          static_cast<unsigned long long>(bytes));
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

ncclResult_t Manager::makeResourceWindow(uint64_t bytes, Window** out) {
  std::unique_ptr<VmmMemory> memory;
  const std::string what = "ncclDevCommCreate: " + ctx_.me() + ": resource memory";
  ncclResult_t status =
      VmmMemory::allocate(drv_, ctx_.cudaDev, bytes, ctx_.anyLsaPeerProcess(), what, LogLevel::kWarn, &memory);
  // Zeroed before the registration: no peer can map it earlier, so no peer sees stale barrier epochs.
  if (status == ncclSuccess &&
      (cudaMemsetAsync(memory->ptr(), 0, memory->bytes(), registrar_.setupStream()) != cudaSuccess ||
       cudaStreamSynchronize(registrar_.setupStream()) != cudaSuccess)) {
    WARN("%s: clearing %llu bytes failed: %s", what.c_str(), static_cast<unsigned long long>(bytes),
         cudaGetErrorString(cudaGetLastError()));
    status = ncclUnhandledCudaError;
  }
  std::unique_ptr<Window> w;
  NCCLCHECK(
      registrar_.registerCollective(memory ? memory->ptr() : nullptr, bytes, 0, WindowRole::kDevResources, status, &w));
  w->ownMemory = std::move(memory);
  registryAdd(w->info);
  if (oneSided_.network() != nullptr) oneSided_.network()->addWindow(w->serial, w->info);
  *out = windows_.add(std::move(w));
  return ncclSuccess;
}

ncclResult_t Manager::createDevComm(const DevCommAsk& ask, ncclResult_t refusal, DevCommMade* out) {
  RelaxedCaptureMode relaxed;
  ScopedDevice device(ctx_.cudaDev);
  collectGraphReleases();
  DevCommMade made;
  made.rank = ctx_.rank;
  made.nranks = ctx_.nranks;
  made.lsaRank = ctx_.lsaRank;
  made.lsaSize = ctx_.lsaSize;
  made.lsaBarrier.count = ask.lsaBarriers;
  made.hybridLsaBarrier.count = ask.hybridBarriers;
  std::vector<ResourceAsk> asks;
  asks.push_back(ResourceAsk{lsaBarrierBytes(ask.lsaBarriers, ctx_.lsaSize), kLsaBarrierAlign, &made.lsaBarrier.handle,
                             "the LSA barriers (lsaBarrierCount)"});
  asks.push_back(ResourceAsk{lsaBarrierBytes(ask.hybridBarriers, ctx_.lsaSize), kLsaBarrierAlign,
                             &made.hybridLsaBarrier.handle, "the hybrid barriers (barrierCount)"});
  asks.insert(asks.end(), ask.resources.begin(), ask.resources.end());
  std::string why;
  if (refusal == ncclSuccess && !windowSupport(drv_, ctx_.cudaDev, &why)) {
    WARN("ncclDevCommCreate: %s: %s", ctx_.me().c_str(), why.c_str());
    refusal = ncclInvalidUsage;
  }
  // Every rank sets up the one-sided operations here if no registration did yet (collective), so
  // that whether GIN can run is known before the ranks vote.
  if (!oneSided_.tried()) {
    const ncclResult_t setUp = oneSided_.setUp(registrar_);
    if (refusal == ncclSuccess) refusal = setUp;
  }
  GinShape gin;
  GinPlaces ginPlaces;
  if (refusal == ncclSuccess && ask.gin) refusal = readyGin();
  if (refusal == ncclSuccess && ask.gin) refusal = planGin(ask, &gin, &ginPlaces, &asks, &made);
  uint64_t bytes = 0;
  if (refusal == ncclSuccess) refusal = layOutResources(asks, &bytes);
  NCCLCHECK(agreeOnResources(refusal, bytes));
  NCCLCHECK(registrar_.tableHead(&made.windowTable));
  if (bytes > 0) {
    Window* w = nullptr;
    NCCLCHECK(makeResourceWindow(bytes, &w));
    made.resourceWindow = w->info->handle;
    made.resourceDesc = w->desc;
    if (ask.gin) NCCLCHECK(startGin(gin, ginPlaces, w, &made));
  }
  INFO(kLogInit, "ncclDevCommCreate: %s: %llu bytes of resources, %d LSA barriers, %d hybrid barriers, %zu buffers",
       ctx_.me().c_str(), static_cast<unsigned long long>(bytes), ask.lsaBarriers, ask.hybridBarriers,
       ask.resources.size());
  *out = made;
  return ncclSuccess;
}

ncclResult_t Manager::destroyDevComm(ncclWindow_t resourceWindow) {
  RelaxedCaptureMode relaxed;
  ScopedDevice device(ctx_.cudaDev);
  collectGraphReleases();
  if (resourceWindow == nullptr) return ncclSuccess;  // it asked for nothing
  Window* w = windows_.find(resourceWindow);
  if (w == nullptr || w->info->role != WindowRole::kDevResources) {
    WARN(
        "ncclDevCommDestroy: %s: the device communicator's resource window %p is none of this communicator's "
        "(destroyed already, or made by another communicator?)",
        ctx_.me().c_str(), static_cast<void*>(resourceWindow));
    return ncclInvalidArgument;
  }
  stopGin(w->serial);
  registryRemove(resourceWindow);
  w->deregistered = true;
  if (w->graphRefs == 0) destroyWindow(w);
  return ncclSuccess;
}

}  // namespace braid::window
