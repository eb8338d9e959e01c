// Collective entry points: each goes to launch/enqueue (checks, queue, launch). Point-to-point and
// the AlltoAll/Gather/Scatter family are in p2p_api.cc, the nccl*Config variants in
// coll_config_api.cc.
#include "api/api_guard.h"
#include "api/coll_calls.h"
#include "api/export.h"
#include "core/comm.h"
#include "launch/enqueue.h"
#include "util/check.h"

namespace braid::api {

ncclResult_t collective(const char* caller, CollId coll, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                        const ncclCollConfig_t* config) {
  return queueingApiGuard(caller, [&] {
    CollTask task{coll, sendbuff, recvbuff, count, datatype, op, root, stream};
    return enqueueColl(comm, task, caller, config);
  });
}

}  // namespace braid::api

namespace {

ncclResult_t collective(const char* caller, braid::CollId coll, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return braid::api::collective(caller, coll, sendbuff, recvbuff, count, datatype, op, root, comm, stream, nullptr);
}

}  // namespace

BRAID_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclAllReduce", braid::CollId::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm,
                    stream);
}

BRAID_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclBroadcast", braid::CollId::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root,
                    comm, stream);
}

BRAID_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return collective("ncclBcast", braid::CollId::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

BRAID_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclReduce", braid::CollId::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

BRAID_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclAllGather", braid::CollId::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0,
                    comm, stream);
}

BRAID_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclReduceScatter", braid::CollId::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0,
                    comm, stream);
}
