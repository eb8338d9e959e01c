// Collective and point-to-point entry points. The data path arrives with the collectives issue;
// until then every call checks its communicator and fails with a WARN naming the operation.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/comm.h"
#include "util/check.h"

namespace {

ncclResult_t pending(ncclComm_t comm, const char* caller) {
  NCCLCHECK(braid::commCheckUsable(comm, caller));
  return braid::notImplemented(caller, "this operation's data path");
}

}  // namespace

BRAID_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclAllReduce", [&] { return pending(comm, "ncclAllReduce"); });
}

BRAID_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclBroadcast", [&] { return pending(comm, "ncclBroadcast"); });
}

BRAID_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclBcast(void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclBcast", [&] { return pending(comm, "ncclBcast"); });
}

BRAID_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclReduce", [&] { return pending(comm, "ncclReduce"); });
}

BRAID_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclAllGather", [&] { return pending(comm, "ncclAllGather"); });
}

BRAID_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclReduceScatter", [&] { return pending(comm, "ncclReduceScatter"); });
}

BRAID_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void*, void*, size_t, ncclDataType_t, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclAlltoAll", [&] { return pending(comm, "ncclAlltoAll"); });
}

BRAID_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclGather", [&] { return pending(comm, "ncclGather"); });
}

BRAID_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclScatter", [&] { return pending(comm, "ncclScatter"); });
}

BRAID_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclSend", [&] { return pending(comm, "ncclSend"); });
}

BRAID_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t comm, cudaStream_t) {
  return braid::apiGuard("ncclRecv", [&] { return pending(comm, "ncclRecv"); });
}
