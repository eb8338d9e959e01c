// The steps of communicator creation that ncclCommInitRank (init.cc) and ncclCommSplit (split.cc)
// share.
#pragma once

#include <nccl.h>

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

}  // namespace braid
