// ncclCommSuspend / ncclCommResume / ncclCommMemStats (NCCL 2.29.7): a communicator lets the device
// memory of its connections and staging go while it is idle (an inference engine asleep, a training
// job between phases) and gets it back later, with every address as it was, so that CUDA graphs
// captured before the suspension replay unchanged after the resume. What stays is a few KiB
// (DevComm, ring orders, point-to-point tables). Host memory (SHM, NET FIFOs) stays as it is.
//
// Both calls are collective: every rank calls them, outside ncclGroupStart/End, with no operation
// in flight that it has launched. Suspension waits for the communicator's launched work, then for
// every rank (a barrier: no peer may still be writing into memory that goes). While suspended, the
// communicator refuses every operation (ncclInvalidUsage) except ncclCommResume,
// ncclCommMemStats, queries, destroy and abort; replaying a graph that holds its kernels is the
// caller's error, as with NCCL.
#pragma once

#include <nccl.h>

#include <cstdint>

struct ncclComm;

namespace braid {

[[nodiscard]] ncclResult_t commSuspend(ncclComm* comm, int flags);
[[nodiscard]] ncclResult_t commResume(ncclComm* comm);
[[nodiscard]] ncclResult_t commMemStats(ncclComm* comm, ncclCommMemStat_t stat, uint64_t* value);

}  // namespace braid
