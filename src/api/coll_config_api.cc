// The nccl*Config entry points (NCCL 2.31/2.32): each is its plain call plus a ncclCollConfig_t
// (NULL: exactly the plain call). The config is read and checked after the communicator and before
// the other arguments (launch/coll_config.h says what each field does in Braid); the arguments are
// checked as the plain call checks them (api/coll_calls.h).
#include "api/coll_calls.h"
#include "api/export.h"

BRAID_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
          const ncclCollConfig_t* config);
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return braid::api::collective("ncclAllReduceConfig", braid::CollId::kAllReduce, sendbuff, recvbuff, count, datatype,
                                op, 0, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return braid::api::collective("ncclBroadcastConfig", braid::CollId::kBroadcast, sendbuff, recvbuff, count, datatype,
                                ncclSum, root, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                              const ncclCollConfig_t* config) {
  return braid::api::collective("ncclReduceConfig", braid::CollId::kReduce, sendbuff, recvbuff, count, datatype, op,
                                root, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff, size_t sendcount,
          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return braid::api::collective("ncclAllGatherConfig", braid::CollId::kAllGather, sendbuff, recvbuff, sendcount,
                                datatype, ncclSum, 0, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff, size_t recvcount,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
          const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                     const ncclCollConfig_t* config) {
  return braid::api::collective("ncclReduceScatterConfig", braid::CollId::kReduceScatter, sendbuff, recvbuff, recvcount,
                                datatype, op, 0, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return braid::api::alltoAll("ncclAlltoAllConfig", sendbuff, recvbuff, count, datatype, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return braid::api::gather("ncclGatherConfig", sendbuff, recvbuff, count, datatype, root, comm, stream, config);
}

BRAID_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return braid::api::scatter("ncclScatterConfig", sendbuff, recvbuff, count, datatype, root, comm, stream, config);
}
