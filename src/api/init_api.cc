// Communicator creation entry points.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"

BRAID_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return braid::apiGuard("ncclGetUniqueId", [&] { return braid::commGetUniqueId(uniqueId); });
}

BRAID_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return braid::apiGuard("ncclCommInitRank", [&] {
    return braid::commInitRank(comm, nranks, &commId, 1, rank, nullptr, "ncclCommInitRank");
  });
}

BRAID_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
          ncclConfig_t* config);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  return braid::apiGuard("ncclCommInitRankConfig", [&] {
    return braid::commInitRank(comm, nranks, &commId, 1, rank, config, "ncclCommInitRankConfig");
  });
}

BRAID_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
          ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config) {
  return braid::apiGuard("ncclCommInitRankScalable", [&] {
    return braid::commInitRank(newcomm, nranks, commIds, nId, myrank, config, "ncclCommInitRankScalable");
  });
}

BRAID_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return braid::apiGuard("ncclCommInitAll", [&] { return braid::commInitAll(comm, ndev, devlist); });
}
