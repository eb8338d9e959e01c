// ncclCommGetUniqueId / ncclCommGrow (2.29, core/grow.h) and ncclCommSuspend / ncclCommResume /
// ncclCommMemStats (2.29.7, core/suspend.h). PyTorch 2.15 imports all five.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"
#include "core/grow.h"
#include "core/suspend.h"
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
  return braid::apiGuard("ncclCommSuspend", [&] { return braid::commSuspend(comm, flags); });
}

BRAID_API(ncclResult_t, ncclCommResume, ncclComm_t comm);
ncclResult_t ncclCommResume(ncclComm_t comm) {
  return braid::apiGuard("ncclCommResume", [&] { return braid::commResume(comm); });
}

BRAID_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  return braid::apiGuard("ncclCommMemStats", [&] { return braid::commMemStats(comm, stat, value); });
}
