// One collective call as the API received it, queued until its group launches.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "device/dev_types.h"
#include "plan/plan.h"
#include "util/dtype.h"

namespace braid {

// What a nccl*Config call asks of its operation (launch/coll_config.h reads ncclCollConfig_t into
// it); the defaults are the plain call's. Each queued operation keeps its own: collectives launch
// one kernel each, so operations of one group never share a plan.
struct CollOptions {
  plan::OpConstraints plan{};  // channels, cluster size, algorithm selection
  // CTAPolicy, resolved (the call's, else the communicator's). Braid's kernels have one shape per
  // plan whatever it says (see README: per-call configuration), so it is logged, not applied.
  int ctaPolicy = NCCL_CTA_POLICY_DEFAULT;
  // launchCompletionEvent: recorded once every CTA of the operation's (last) kernel has begun.
  cudaEvent_t launchEvent = nullptr;
};

struct CollTask {
  CollId coll;
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // as the API names it: AllGather sendcount, ReduceScatter recvcount, otherwise count
  ncclDataType_t dtype;
  ncclRedOp_t op;  // ncclSum for Broadcast and AllGather
  int root;        // Broadcast and Reduce; 0 otherwise
  cudaStream_t stream;
  // A ncclRedOpCreatePreMulSum op (op >= ncclNumOps), resolved when the call was made: the scalar's
  // bytes, or where kernels read it (ncclScalarDevice).
  uint64_t scalarBits = 0;
  const void* scalarPtr = nullptr;
  CollOptions options{};
};

// Whether its op is a ncclRedOpCreatePreMulSum one.
inline bool hasUserOp(const CollTask& task) { return collUsesOp(task.coll) && task.op >= ncclNumOps; }

bool dtypeIsFloating(ncclDataType_t dtype);
// Bytes the operation reads from sendbuff and writes to recvbuff (AllGather's output and
// ReduceScatter's input are nranks blocks of count elements).
size_t collSendBytes(const CollTask& task, int nranks);
size_t collRecvBytes(const CollTask& task, int nranks);
// The operation's size as nccl-tests counts it (AllGather: all output; ReduceScatter: all input).
size_t collBytes(const CollTask& task, int nranks);

}  // namespace braid
