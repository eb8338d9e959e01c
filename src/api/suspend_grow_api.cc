// ncclCommGetUniqueId / ncclCommGrow (2.29, core/grow.h) and ncclCommSuspend / ncclCommResume /
// ncclCommMemStats (2.29.7). PyTorch 2.15 imports all five. Suspending is not implemented yet: those
// three check their arguments and fail with a WARN naming the missing feature.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"
#include "core/grow.h"
#include "util/check.h"

BRAID_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  return braid::apiGuard("ncclCommGetUniqueId", [&] { return braid::commGetGrowId(comm, uniqueId); });
}

BRAID_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
          ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config) {
  return braid::apiGuard("ncclCommGrow",
                         [&] { return braid::commGrow(comm, nRanks, uniqueId, rank, newcomm, config); });
}

BRAID_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
  const char* caller = "ncclCommSuspend";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckUsable(comm, caller));
    if ((flags & ~NCCL_SUSPEND_MEM) != 0) {
      WARN("%s: flags 0x%x has bits other than NCCL_SUSPEND_MEM (0x%x)", caller, flags, NCCL_SUSPEND_MEM);
      return ncclInvalidArgument;
    }
    return braid::notImplemented(caller, "suspending a communicator's device memory (ncclCommSuspend)");
  });
}

BRAID_API(ncclResult_t, ncclCommResume, ncclComm_t comm);
ncclResult_t ncclCommResume(ncclComm_t comm) {
  const char* caller = "ncclCommResume";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    return braid::notImplemented(caller, "suspending a communicator's device memory (ncclCommSuspend)");
  });
}

BRAID_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* caller = "ncclCommMemStats";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    if (value == nullptr || stat < ncclStatGpuMemSuspend || stat > ncclStatGpuMemTotal) {
      WARN("%s: stat %d and value %p: stat must be an ncclCommMemStat_t and value not NULL", caller,
           static_cast<int>(stat), static_cast<void*>(value));
      return ncclInvalidArgument;
    }
    return braid::notImplemented(caller, "per-communicator device memory statistics (ncclCommMemStats)");
  });
}
