// The steps of communicator creation that ncclCommInitRank (init.cc) and ncclCommSplit (split.cc)
// share.
#pragma once

#include <nccl.h>

#include <functional>
#include <vector>

struct ncclComm;

namespace braid {

// Once per process: the [dev] field of log lines and the VERSION banner.
void initLoggingOnce();

// The calling thread's current GPU becomes the communicator's GPU (cudaDev_, busId_, smCount_).
[[nodiscard]] ncclResult_t queryLocalGpu(ncclComm* comm, int* computeCap);

// The collective part of init (bootstrap rendezvous, peer exchange, checks) for comm->rank_ of
// comm->nranks_, then the outcome in the communicator's state (kReady or kFailed) and async error.
[[nodiscard]] ncclResult_t finishInit(ncclComm* comm, const std::vector<ncclUniqueId>& ids, int computeCap);

// A nonblocking communicator's creation (config blocking = 0, outside a group): `job` (which ends in
// finishInit) runs on comm->background_ and the caller gets ncclInProgress; ncclCommGetAsyncError
// reports the outcome. A job that fails before finishInit leaves the communicator kFailed with its
// error, like a failed rendezvous.
[[nodiscard]] ncclResult_t startInBackground(ncclComm* comm, std::function<ncclResult_t()> job);

}  // namespace braid
