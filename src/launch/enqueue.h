// Entry of every collective and point-to-point call: checks, queues on the communicator's data
// path, and (outside a group, or at the outermost ncclGroupEnd) connects and launches.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "launch/coll_task.h"

struct ncclComm;
namespace braid::net {
class Network;
}

namespace braid {

// The device address of the word the communicator's kernels poll to stop (data_path.h), made with
// its data path if need be: device communicators carry it as their abortFlag.
[[nodiscard]] ncclResult_t kernelAbortWordOf(ncclComm* comm, uint32_t** out);
// The communicator's network to other hosts (and its proxy), opened with its data path if need be.
[[nodiscard]] ncclResult_t networkOf(ncclComm* comm, net::Network** out);

// config: a nccl*Config call's ncclCollConfig_t (NULL: the plain call), read into task's options
// after the communicator's checks (launch/coll_config.h).
[[nodiscard]] ncclResult_t enqueueColl(ncclComm* comm, const CollTask& task, const char* caller,
                                       const ncclCollConfig_t* config = nullptr);

// ncclSend (send = true, buff read) or ncclRecv (buff written), the same way. An empty operation
// (count 0) is checked and dropped: its peer drops its match too. staged: a send whose buffer a
// receive of the same group writes (in-place AlltoAll, see P2pTask::staged). launchEvent: the
// launchCompletionEvent of the AlltoAll, Gather or Scatter Config call it belongs to (see
// p2pConfigEvent); a group's sends and receives of one communicator launch together, so they may
// carry one such event between them (another one: ncclInvalidUsage with a WARN).
[[nodiscard]] ncclResult_t enqueueP2p(ncclComm* comm, bool send, const void* buff, size_t count, ncclDataType_t dtype,
                                      int peer, cudaStream_t stream, const char* caller, bool staged = false,
                                      cudaEvent_t launchEvent = nullptr);

// What applies of an AlltoAll, Gather or Scatter Config call's ncclCollConfig_t (`name`: "AlltoAll",
// ...) once it is checked: its launchCompletionEvent (*launchEvent; NULL without). config NULL: none.
[[nodiscard]] ncclResult_t p2pConfigEvent(const ncclComm* comm, const ncclCollConfig_t* config, const char* name,
                                          const char* caller, cudaEvent_t* launchEvent);

// ncclCommRegister / ncclCommDeregister (launch/reg_launch.cc explains what registration enables).
// Both check the communicator and their arguments (ncclInvalidArgument with a WARN naming it).
[[nodiscard]] ncclResult_t commRegister(ncclComm* comm, void* buff, size_t size, void** handle);
[[nodiscard]] ncclResult_t commDeregister(ncclComm* comm, void* handle);

// ncclRedOpCreatePreMulSum / ncclRedOpDestroy (launch/red_ops.h).
[[nodiscard]] ncclResult_t redOpCreatePreMulSum(ncclComm* comm, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                ncclScalarResidence_t residence);
[[nodiscard]] ncclResult_t redOpDestroy(ncclComm* comm, ncclRedOp_t op);

}  // namespace braid
