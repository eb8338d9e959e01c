// The bodies of the collective entry points, shared by the plain calls (coll_api.cc, p2p_api.cc)
// and their nccl*Config variants (coll_config_api.cc), so that both check their arguments the same
// way. `config` NULL is the plain call; otherwise ncclCollConfig_t is read and checked after the
// communicator (launch/coll_config.h). Each runs through queueingApiGuard: a call refused inside a
// group fails the group.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "device/dev_types.h"

namespace braid::api {

[[nodiscard]] ncclResult_t collective(const char* caller, CollId coll, const void* sendbuff, void* recvbuff,
                                      size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                      cudaStream_t stream, const ncclCollConfig_t* config);

// AlltoAll, Gather and Scatter: groups of sends and receives (p2p_api.cc).
[[nodiscard]] ncclResult_t alltoAll(const char* caller, const void* sendbuff, void* recvbuff, size_t count,
                                    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                    const ncclCollConfig_t* config);
[[nodiscard]] ncclResult_t gather(const char* caller, const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                                  const ncclCollConfig_t* config);
[[nodiscard]] ncclResult_t scatter(const char* caller, const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
                                   const ncclCollConfig_t* config);

}  // namespace braid::api
