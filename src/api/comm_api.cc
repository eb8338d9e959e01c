// Communicator teardown, derivation and query entry points.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"
#include "core/shrink.h"
#include "core/split.h"
#include "util/check.h"

namespace {

// For the query functions: a valid handle and a non-NULL output pointer.
ncclResult_t checkQuery(const ncclComm* comm, const void* out, const char* caller, const char* outName) {
  NCCLCHECK(braid::commCheckHandle(comm, caller));
  if (out == nullptr) {
    WARN("%s: %s is NULL", caller, outName);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

BRAID_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return braid::apiGuard("ncclCommFinalize", [&] { return braid::commFinalize(comm); });
}

BRAID_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return braid::apiGuard("ncclCommDestroy", [&] { return braid::commDestroy(comm); });
}

BRAID_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return braid::apiGuard("ncclCommAbort", [&] { return braid::commAbort(comm); });
}

BRAID_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return braid::apiGuard("ncclCommRevoke", [&] { return braid::commRevoke(comm, revokeFlags); });
}

BRAID_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return braid::apiGuard("ncclCommSplit", [&] { return braid::commSplit(comm, color, key, newcomm, config); });
}

BRAID_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
          ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags) {
  return braid::apiGuard("ncclCommShrink", [&] {
    return braid::commShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  });
}

BRAID_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return braid::apiGuard("ncclCommGetAsyncError", [&] {
    NCCLCHECK(checkQuery(comm, asyncError, "ncclCommGetAsyncError", "asyncError"));
    *asyncError = comm->asyncError_.load();
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return braid::apiGuard("ncclCommCount", [&] {
    NCCLCHECK(checkQuery(comm, count, "ncclCommCount", "count"));
    *count = comm->nranks_;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return braid::apiGuard("ncclCommCuDevice", [&] {
    NCCLCHECK(checkQuery(comm, device, "ncclCommCuDevice", "device"));
    *device = comm->cudaDev_;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return braid::apiGuard("ncclCommUserRank", [&] {
    NCCLCHECK(checkQuery(comm, rank, "ncclCommUserRank", "rank"));
    *rank = comm->rank_;
    return ncclSuccess;
  });
}
