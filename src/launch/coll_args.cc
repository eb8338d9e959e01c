#include "launch/coll_args.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "core/comm.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// Which ranks must pass a real buffer: Broadcast reads sendbuff on the root only, Reduce writes
// recvbuff on the root only (NCCL's rules); every other collective uses both everywhere.
bool needsSendbuff(const CollTask& task, int rank) { return task.coll != CollId::kBroadcast || rank == task.root; }
bool needsRecvbuff(const CollTask& task, int rank) { return task.coll != CollId::kReduce || rank == task.root; }

bool usesOp(CollId coll) {
  return coll == CollId::kReduce || coll == CollId::kAllReduce || coll == CollId::kReduceScatter;
}
bool usesRoot(CollId coll) { return coll == CollId::kReduce || coll == CollId::kBroadcast; }

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

ncclResult_t checkBuffers(const ncclComm* comm, const CollTask& task, const char* caller) {
  bool checkPointers = paramInt(ParamId::kCheckPointers) != 0;
  if (needsSendbuff(task, comm->rank_)) {
    if (task.sendbuff == nullptr) {
      WARN("%s: sendbuff is NULL with count %zu (rank %d)", caller, task.count, comm->rank_);
      return ncclInvalidArgument;
    }
    if (checkPointers) NCCLCHECK(checkPointer(comm, task.sendbuff, "sendbuff", caller));
  }
  if (needsRecvbuff(task, comm->rank_)) {
    if (task.recvbuff == nullptr) {
      WARN("%s: recvbuff is NULL with count %zu (rank %d)", caller, task.count, comm->rank_);
      return ncclInvalidArgument;
    }
    if (checkPointers) NCCLCHECK(checkPointer(comm, task.recvbuff, "recvbuff", caller));
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t checkCollArgs(const ncclComm* comm, const CollTask& task, const char* caller) {
  size_t elemSize = dtypeSize(task.dtype);
  if (elemSize == 0) {
    WARN("%s: datatype %d is not a valid ncclDataType_t (rank %d)", caller, static_cast<int>(task.dtype), comm->rank_);
    return ncclInvalidArgument;
  }
  if (usesOp(task.coll) && (task.op < 0 || task.op >= ncclNumOps)) {
    // Ops from ncclRedOpCreatePreMulSum (values >= ncclNumOps) arrive with the communicator-management issue.
    WARN("%s: op %d is not a valid reduction operation (rank %d; built-in ops are 0-%d)", caller,
         static_cast<int>(task.op), comm->rank_, static_cast<int>(ncclNumOps) - 1);
    return ncclInvalidArgument;
  }
  if (usesRoot(task.coll) && (task.root < 0 || task.root >= comm->nranks_)) {
    WARN("%s: root %d is not a rank of this communicator (nranks %d, rank %d)", caller, task.root, comm->nranks_,
         comm->rank_);
    return ncclInvalidArgument;
  }
  bool perRank = task.coll == CollId::kAllGather || task.coll == CollId::kReduceScatter;
  size_t factor = perRank ? elemSize * static_cast<size_t>(comm->nranks_) : elemSize;
  if (task.count > SIZE_MAX / factor) {
    WARN("%s: count %zu of %zu-byte elements overflows the addressable size (rank %d)", caller, task.count, elemSize,
         comm->rank_);
    return ncclInvalidArgument;
  }
  if (task.count == 0) return ncclSuccess;
  return checkBuffers(comm, task, caller);
}

ncclResult_t checkP2pArgs(const ncclComm* comm, const void* buff, const char* bufName, size_t count,
                          ncclDataType_t dtype, int peer, const char* caller, size_t* bytes) {
  size_t elemSize = dtypeSize(dtype);
  if (elemSize == 0) {
    WARN("%s: datatype %d is not a valid ncclDataType_t (rank %d)", caller, static_cast<int>(dtype), comm->rank_);
    return ncclInvalidArgument;
  }
  if (peer < 0 || peer >= comm->nranks_) {
    WARN("%s: peer %d is not a rank of this communicator (nranks %d, rank %d)", caller, peer, comm->nranks_,
         comm->rank_);
    return ncclInvalidArgument;
  }
  if (count > SIZE_MAX / elemSize) {
    WARN("%s: count %zu of %zu-byte elements overflows the addressable size (rank %d)", caller, count, elemSize,
         comm->rank_);
    return ncclInvalidArgument;
  }
  *bytes = count * elemSize;
  if (count == 0) return ncclSuccess;
  if (buff == nullptr) {
    WARN("%s: %s is NULL with count %zu (rank %d, peer %d)", caller, bufName, count, comm->rank_, peer);
    return ncclInvalidArgument;
  }
  if (paramInt(ParamId::kCheckPointers) != 0) NCCLCHECK(checkPointer(comm, buff, bufName, caller));
  return ncclSuccess;
}

}  // namespace braid
