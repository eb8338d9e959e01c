// Group entry points.
#include <cstddef>

#include "api/api_guard.h"
#include "api/export.h"
#include "core/group.h"
#include "util/check.h"
#include "util/log.h"

BRAID_API(ncclResult_t, ncclGroupStart);
ncclResult_t ncclGroupStart() {
  return braid::apiGuard("ncclGroupStart", [] {
    braid::GroupContext::current().start();
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclGroupEnd);
ncclResult_t ncclGroupEnd() {
  return braid::apiGuard("ncclGroupEnd", [] { return braid::GroupContext::current().end(); });
}

namespace {

// The caller's struct as NCCL_SIM_INFO_INITIALIZER made it: its size must reach estimatedTime
// (older or newer layouts keep the fields where they are) and its magic must match.
ncclResult_t checkSimInfo(const ncclSimInfo_t* simInfo) {
  constexpr unsigned kSimInfoMagic = 0x74685283;
  constexpr size_t kNeeded = offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float);
  if (simInfo == nullptr) {
    WARN("ncclGroupSimulateEnd: simInfo is NULL");
    return ncclInvalidArgument;
  }
  if (simInfo->size < kNeeded) {
    WARN("ncclGroupSimulateEnd: simInfo->size is %zu, less than the %zu bytes that reach estimatedTime", simInfo->size,
         kNeeded);
    return ncclInvalidArgument;
  }
  if (simInfo->magic != kSimInfoMagic) {
    WARN("ncclGroupSimulateEnd: simInfo->magic is 0x%x: initialize it with NCCL_SIM_INFO_INITIALIZER", simInfo->magic);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

// Ends the group like ncclGroupEnd, but launches nothing: the operations are estimated and dropped.
// A bad simInfo changes nothing (the group stays open). At an inner level it only ends that level.
BRAID_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return braid::apiGuard("ncclGroupSimulateEnd", [simInfo] {
    NCCLCHECK(checkSimInfo(simInfo));
    braid::GroupContext& group = braid::GroupContext::current();
    bool outermost = group.depth() == 1;
    double us = 0.0;
    NCCLCHECK(group.end(&us));
    if (outermost) simInfo->estimatedTime = static_cast<float>(us);
    return ncclSuccess;
  });
}
