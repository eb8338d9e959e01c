// ncclCommQueryProperties: what the communicator is and which optional features it supports.
#include <nccl_device/host.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "api/api_guard.h"
#include "api/dev_comm_abi.h"
#include "api/export.h"
#include "api/window_glue.h"
#include "core/comm.h"
#include "core/teams.h"
#include "topo/nvml_api.h"
#include "util/check.h"
#include "util/params.h"
#include "window/support.h"

namespace {

// The caller's struct may be any released layout: fields were only ever appended, so the library
// fills the prefix that fits in props->size. (Layouts before 2.29.7 had a one-byte ginType at the
// offset where later ones have padding; Braid tells such a program ginType NONE, i.e. zero bytes, so
// the same prefix copy gives it the right value too.)
constexpr size_t kFirstField = offsetof(ncclCommProperties_t, rank);

// One-sided operations from the host run where the communicator has RMA contexts, the GPU and
// driver allow them, and the signal memory that the first window registration makes has not
// failed (across hosts through the network: window/net_backend.h).
bool hostRma(ncclComm* comm) {
  if (comm->config_.rma.numRmaCtx <= 0) return false;
  const braid::CudaDriver* drv = nullptr;
  std::string why;
  if (braid::cudaDriver(&drv) != ncclSuccess || !braid::window::rmaSupport(drv, comm->cudaDev_, &why)) return false;
  braid::window::Manager* windows = nullptr;
  if (braid::commWindows(comm, false, &windows) != ncclSuccess) return false;
  return windows == nullptr || windows->rmaPossible();
}

bool windowsPossible(ncclComm* comm) {
  const braid::CudaDriver* drv = nullptr;
  std::string why;
  return braid::cudaDriver(&drv) == ncclSuccess && braid::window::windowSupport(drv, comm->cudaDev_, &why);
}

// `version`: the NCCL_VERSION_CODE the caller was compiled with. GIN is there for programs built
// against 2.32 or later (api/dev_comm_abi.h: kFirstGinVersion).
ncclCommProperties_t propertiesOf(ncclComm* comm, unsigned int version) {
  ncclCommProperties_t p;
  std::memset(&p, 0, sizeof(p));  // also the padding: see above
  p.rank = comm->rank_;
  p.nRanks = comm->nranks_;
  p.cudaDev = comm->cudaDev_;
  p.nvmlDev = braid::topo::nvmlIndexOfBusId(comm->busId_);
  // Device communicators need windows (cuMem on this GPU); GIN is the proxy transport (the
  // library's network thread), wherever one-sided operations can run. Not in Braid: multicast
  // (NVLink SHARP stays off) and CFT.
  p.deviceApiSupport = windowsPossible(comm);
  p.multimemSupport = false;
  const bool gin = p.deviceApiSupport && hostRma(comm) && version >= braid::kFirstGinVersion &&
                   braid::paramInt(braid::ParamId::kGinEnable) != 0;
  p.ginType = gin ? NCCL_GIN_TYPE_PROXY : NCCL_GIN_TYPE_NONE;
  p.ginSupport[NCCL_GIN_TYPE_PROXY] = gin;
  p.nLsaTeams = comm->nranks_ / braid::lsaLayoutOf(comm->peers_, comm->rank_).size;
  p.hostRmaSupport = hostRma(comm);
  p.railedGinType = p.ginType;  // a full connection reaches the rails too
  p.commHash = comm->commHash_;
  p.ginMinStride = 0;
  p.ginConnectionType = gin ? NCCL_GIN_CONNECTION_FULL : NCCL_GIN_CONNECTION_NONE;
  p.devCommRuntimeVersionSize = 0;
  p.cftSupport = false;
  p.cftMulticastSupport = false;
  p.cftCountedSupport = false;
  return p;
}

}  // namespace

BRAID_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props) {
  const char* caller = "ncclCommQueryProperties";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    if (props == nullptr) {
      WARN("%s: props is NULL", caller);
      return ncclInvalidArgument;
    }
    if (props->magic != NCCL_API_MAGIC || props->size < kFirstField) {
      WARN("%s: props->magic is 0x%x and props->size %zu; initialize it with NCCL_COMM_PROPERTIES_INITIALIZER", caller,
           props->magic, props->size);
      return ncclInvalidArgument;
    }
    if (comm->state_.load() == braid::CommState::kInitializing || comm->peers_.empty()) {
      WARN("%s: the communicator (rank %d) has not finished its initialization", caller, comm->rank_);
      return ncclInvalidUsage;
    }
    const ncclCommProperties_t full = propertiesOf(comm, props->version);
    const size_t end = props->size < sizeof(full) ? props->size : sizeof(full);
    std::memcpy(reinterpret_cast<char*>(props) + kFirstField, reinterpret_cast<const char*>(&full) + kFirstField,
                end - kFirstField);
    return ncclSuccess;
  });
}
