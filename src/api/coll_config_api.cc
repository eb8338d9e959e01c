// The collectives with per-call options (NCCL 2.31/2.32: ncclAllReduceConfig and its siblings).
//
// A NULL config, or one that leaves every option at its default, is exactly the plain call. The
// options Braid does not apply per call yet (CTA bounds, cluster size, algorithm selection, CTA
// policy, the launch-completion event) are refused with a WARN naming the field, never ignored: a
// caller that asks for them must not get a call that silently did something else. The vendor list
// `ext` and `userProfilerTag` are read by nothing in NCCL either without a plugin: both are accepted.
#include <cstddef>

#include "api/api_guard.h"
#include "api/export.h"
#include "util/check.h"

namespace {

constexpr size_t kMinCollConfigSize = offsetof(ncclCollConfig_t, version) + sizeof(unsigned);

bool isSet(int v) { return v != NCCL_CONFIG_UNDEF_INT; }

ncclResult_t refuse(const char* caller, const char* field) {
  WARN(
      "%s: config->%s is set; per-call %s is not implemented in this version of Braid (leave it at its "
      "NCCL_COLLCONFIG_INITIALIZER value, or use the communicator's ncclConfig_t)",
      caller, field, field);
  return ncclInvalidUsage;
}

// Checks the caller's struct: size and magic, then every option it may carry by its size.
ncclResult_t checkCollConfig(const ncclCollConfig_t* c, const char* caller) {
  if (c == nullptr) return ncclSuccess;
  if (c->size < kMinCollConfigSize || c->magic != NCCL_API_MAGIC) {
    WARN("%s: config->size is %zu and config->magic 0x%x; initialize it with NCCL_COLLCONFIG_INITIALIZER", caller,
         c->size, c->magic);
    return ncclInvalidArgument;
  }
  auto has = [c](size_t offset, size_t bytes) { return c->size >= offset + bytes; };
  if (has(offsetof(ncclCollConfig_t, minCTAs), sizeof(int)) && isSet(c->minCTAs)) return refuse(caller, "minCTAs");
  if (has(offsetof(ncclCollConfig_t, maxCTAs), sizeof(int)) && isSet(c->maxCTAs)) return refuse(caller, "maxCTAs");
  if (has(offsetof(ncclCollConfig_t, nvlsCTAs), sizeof(int)) && isSet(c->nvlsCTAs)) return refuse(caller, "nvlsCTAs");
  if (has(offsetof(ncclCollConfig_t, cgaClusterSize), sizeof(int)) && isSet(c->cgaClusterSize)) {
    return refuse(caller, "cgaClusterSize");
  }
  if (has(offsetof(ncclCollConfig_t, algSelection), sizeof(char*)) && c->algSelection != nullptr &&
      c->algSelection[0] != '\0') {
    return refuse(caller, "algSelection");
  }
  if (has(offsetof(ncclCollConfig_t, CTAPolicy), sizeof(int)) && isSet(c->CTAPolicy))
    return refuse(caller, "CTAPolicy");
  if (has(offsetof(ncclCollConfig_t, launchCompletionEvent), sizeof(cudaEvent_t)) &&
      c->launchCompletionEvent != nullptr) {
    return refuse(caller, "launchCompletionEvent");
  }
  return ncclSuccess;
}

// A refused config inside a group fails the group at its ncclGroupEnd, like any refused call.
template <typename Call>
ncclResult_t withConfig(const char* caller, const ncclCollConfig_t* config, Call&& call) {
  const ncclResult_t checked = braid::queueingApiGuard(caller, [&] { return checkCollConfig(config, caller); });
  if (checked != ncclSuccess) return checked;
  return call();
}

}  // namespace

BRAID_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
          const ncclCollConfig_t* config);
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return withConfig("ncclAllReduceConfig", config,
                    [&] { return pncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

BRAID_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return withConfig("ncclBroadcastConfig", config,
                    [&] { return pncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

BRAID_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                              const ncclCollConfig_t* config) {
  return withConfig("ncclReduceConfig", config,
                    [&] { return pncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

BRAID_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff, size_t sendcount,
          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return withConfig("ncclAllGatherConfig", config,
                    [&] { return pncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

BRAID_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff, size_t recvcount,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
          const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                     const ncclCollConfig_t* config) {
  return withConfig("ncclReduceScatterConfig", config,
                    [&] { return pncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

BRAID_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return withConfig("ncclAlltoAllConfig", config,
                    [&] { return pncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream); });
}

BRAID_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return withConfig("ncclGatherConfig", config,
                    [&] { return pncclGather(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

BRAID_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return withConfig("ncclScatterConfig", config,
                    [&] { return pncclScatter(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}
