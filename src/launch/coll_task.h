// One collective call as the API received it, queued until its group launches.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "device/dev_types.h"

namespace braid {

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
};

// Whether its op is a ncclRedOpCreatePreMulSum one.
inline bool hasUserOp(const CollTask& task) { return collUsesOp(task.coll) && task.op >= ncclNumOps; }

// Bytes of one element; 0 for an invalid type.
size_t dtypeSize(ncclDataType_t dtype);
bool dtypeIsFloating(ncclDataType_t dtype);
// Bytes the operation reads from sendbuff and writes to recvbuff (AllGather's output and
// ReduceScatter's input are nranks blocks of count elements).
size_t collSendBytes(const CollTask& task, int nranks);
size_t collRecvBytes(const CollTask& task, int nranks);
// The operation's size as nccl-tests counts it (AllGather: all output; ReduceScatter: all input).
size_t collBytes(const CollTask& task, int nranks);

}  // namespace braid
