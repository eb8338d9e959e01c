#include "launch/data_path_context.h"

#include <cstdint>
#include <vector>

#include "core/comm.h"
#include "cuda/cuda_check.h"
#include "launch/network_link.h"
#include "util/check.h"
#include "util/params.h"

namespace braid {
namespace {

size_t fifoBytes(ParamId id, int proto) {
  // Whole 16-byte-aligned slots of at least 4 KiB each.
  int64_t bytes = paramInt(id);
  int64_t slot = bytes / kFifoSlots[proto];
  if (slot < 4096) slot = 4096;
  return static_cast<size_t>(slot / 4096 * 4096) * kFifoSlots[proto];
}

}  // namespace

ncclResult_t KernelLaunch::init(bool hopper) {
  coll.pdl = hopper && paramInt(ParamId::kLaunchPdl) != 0;
  clusters = hopper;
  plain.pdl = coll.pdl;
  int driver = 0;
  CUDACHECK(cudaDriverGetVersion(&driver));
  launchEventAttr = driver >= 12030;
  return ncclSuccess;
}

ncclResult_t KernelLaunch::withLaunchEvent(LaunchOptions base, cudaEvent_t event, cudaStream_t stream, bool captured,
                                           LaunchOptions* out) const {
  if (event != nullptr && launchEventAttr) {
    base.completionEvent = event;
    base.pdl = base.pdl && captured;  // captured: recorded by a node behind the kernel (afterCapturedLaunch)
  } else if (event != nullptr) {
    CUDACHECK(cudaEventRecord(event, stream));
  }
  *out = base;
  return ncclSuccess;
}

ncclResult_t KernelLaunch::afterCapturedLaunch(cudaEvent_t event, cudaStream_t stream, bool captured) const {
  if (event != nullptr && captured) {
    CUDACHECK(cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal));
  }
  return ncclSuccess;
}

transport::Context DataPathContext::transportContext(bool netLl) const {
  transport::Context ctx{};
  ctx.rank = comm->rank_;
  ctx.nranks = comm->nranks_;
  ctx.cudaDev = comm->cudaDev_;
  ctx.commHash = comm->commHash_;
  ctx.bootstrap = comm->bootstrap_.get();
  ctx.peers = placesOf(comm->peers_);
  ctx.buffBytes[kProtoSimple] = fifoBytes(ParamId::kBuffSize, kProtoSimple);
  ctx.buffBytes[kProtoLL] = fifoBytes(ParamId::kLlBuffSize, kProtoLL);
  ctx.buffBytes[kProtoLL128] = fifoBytes(ParamId::kLl128BuffSize, kProtoLL128);
  ctx.abortFlag = comm->watch_.abortFlag().hostWord();
  ctx.network = net->network();
  ctx.proxy = net->proxy();
  ctx.netLl = netLl;  // with a NET hop, only when BRAID_NET_LL allows LL on it
  return ctx;
}

}  // namespace braid
