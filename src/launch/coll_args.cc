#include "launch/coll_args.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "core/comm.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// Which ranks must pass a real buffer: Broadcast reads sendbuff on the root only, Reduce writes
// recvbuff on the root only (NCCL's rules); every other collective uses both everywhere.
bool needsSendbuff(const CollTask& task, int rank) { return task.coll != CollId::kBroadcast || rank == task.root; }
bool needsRecvbuff(const CollTask& task, int rank) { return task.coll != CollId::kReduce || rank == task.root; }

// NCCL_CHECK_POINTERS=1: the buffer must be device (or managed) memory that the communicator's GPU owns.
ncclResult_t checkPointer(const ncclComm* comm, const void* ptr, const char* name, const char* caller) {
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error this query may leave
    WARN("%s: %s %p is not memory CUDA knows (%s); rank %d", caller, name, ptr, cudaGetErrorString(err), comm->rank_);
    return ncclInvalidArgument;
  }
  if (attr.type == cudaMemoryTypeManaged) return ncclSuccess;
  if (attr.type != cudaMemoryTypeDevice) {
    WARN("%s: %s %p is host memory, not device memory of GPU %d (rank %d)", caller, name, ptr, comm->cudaDev_,
         comm->rank_);
    return ncclInvalidArgument;
  }
  if (attr.device != comm->cudaDev_) {
    WARN("%s: %s %p is on GPU %d, but rank %d's communicator uses GPU %d", caller, name, ptr, attr.device, comm->rank_,
         comm->cudaDev_);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t checkDatatype(const ncclComm* comm, ncclDataType_t dtype, const char* caller, size_t* elemSize) {
  *elemSize = dtypeSize(dtype);
  if (*elemSize != 0) return ncclSuccess;
  WARN("%s: datatype %d is not a valid ncclDataType_t (rank %d)", caller, static_cast<int>(dtype), comm->rank_);
  return ncclInvalidArgument;
}

ncclResult_t checkRank(const ncclComm* comm, int rank, const char* name, const char* caller) {
  if (rank >= 0 && rank < comm->nranks_) return ncclSuccess;
  WARN("%s: %s %d is not a rank of this communicator (nranks %d, rank %d)", caller, name, rank, comm->nranks_,
       comm->rank_);
  return ncclInvalidArgument;
}

ncclResult_t checkCount(const ncclComm* comm, size_t count, size_t elemSize, size_t blocks, const char* caller) {
  if (count <= SIZE_MAX / elemSize / blocks) return ncclSuccess;
  WARN("%s: count %zu of %zu-byte elements%s overflows the addressable size (rank %d)", caller, count, elemSize,
       blocks > 1 ? " per rank" : "", comm->rank_);
  return ncclInvalidArgument;
}

ncclResult_t checkBuffer(const ncclComm* comm, const void* buff, const char* name, size_t count, const char* caller) {
  if (count == 0) return ncclSuccess;
  if (buff == nullptr) {
    WARN("%s: %s is NULL with count %zu (rank %d)", caller, name, count, comm->rank_);
    return ncclInvalidArgument;
  }
  if (paramInt(ParamId::kCheckPointers) != 0) NCCLCHECK(checkPointer(comm, buff, name, caller));
  return ncclSuccess;
}

ncclResult_t checkCollArgs(const ncclComm* comm, const CollTask& task, const char* caller) {
  size_t elemSize = 0;
  NCCLCHECK(checkDatatype(comm, task.dtype, caller, &elemSize));
  // Values from ncclNumOps on are ncclRedOpCreatePreMulSum's: enqueueColl resolves them.
  if (collUsesOp(task.coll) && (task.op < 0 || task.op >= ncclMaxRedOp)) {
    WARN("%s: op %d is not a valid reduction operation (rank %d; built-in ops are 0-%d)", caller,
         static_cast<int>(task.op), comm->rank_, static_cast<int>(ncclNumOps) - 1);
    return ncclInvalidArgument;
  }
  if (collUsesRoot(task.coll)) NCCLCHECK(checkRank(comm, task.root, "root", caller));
  bool perRank = task.coll == CollId::kAllGather || task.coll == CollId::kReduceScatter;
  NCCLCHECK(checkCount(comm, task.count, elemSize, perRank ? static_cast<size_t>(comm->nranks_) : 1, caller));
  if (needsSendbuff(task, comm->rank_)) NCCLCHECK(checkBuffer(comm, task.sendbuff, "sendbuff", task.count, caller));
  if (needsRecvbuff(task, comm->rank_)) NCCLCHECK(checkBuffer(comm, task.recvbuff, "recvbuff", task.count, caller));
  return ncclSuccess;
}

ncclResult_t checkP2pArgs(const ncclComm* comm, const void* buff, const char* bufName, size_t count,
                          ncclDataType_t dtype, int peer, const char* caller, size_t* bytes) {
  size_t elemSize = 0;
  NCCLCHECK(checkDatatype(comm, dtype, caller, &elemSize));
  NCCLCHECK(checkRank(comm, peer, "peer", caller));
  NCCLCHECK(checkCount(comm, count, elemSize, 1, caller));
  *bytes = count * elemSize;
  return checkBuffer(comm, buff, bufName, count, caller);
}

}  // namespace braid
