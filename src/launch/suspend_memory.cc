// The data path's part of ncclCommSuspend / ncclCommResume (core/suspend.h): the connections'
// device blocks (transport/suspend.h) and the staging memory go, and come back at the same
// addresses; DevComm, the ring orders and the point-to-point tables (a few KiB) stay, so the
// kernels that CUDA graphs captured before the suspension run unchanged after the resume.
#include "core/comm.h"
#include "cuda/capture_mode.h"
#include "cuda/scoped_device.h"
#include "launch/comm_data_path.h"
#include "transport/suspend.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {

DataPathBase::MemoryStats CommDataPath::memoryStats() const {
  const transport::BlockBytes blocks = transport::ownDeviceBytes(share_.connections());
  MemoryStats stats;
  stats.suspendable = blocks.suspendable + device_->suspendableBytes();
  stats.persistent = blocks.persistent + device_->persistentBytes();
  return stats;
}

bool CommDataPath::suspendable(std::string* why) const {
  if (share_.inGroup()) {
    // Its connections are other communicators' too (ncclCommSplit with splitShare), as NCCL refuses.
    *why = "it shares connections with other communicators (split with splitShare)";
    return false;
  }
  return transport::connectionsSuspendable(share_.connections(), why) && device_->suspendable(why);
}

ncclResult_t CommDataPath::suspendMemory() {
  ScopedDevice device(comm_->cudaDev_);
  RelaxedCaptureMode relaxed;  // another thread may be capturing a graph meanwhile
  NCCLCHECK(transport::suspendConnections(share_.connections()));
  return device_->suspend();
}

ncclResult_t CommDataPath::resumeMemory() {
  ScopedDevice device(comm_->cudaDev_);
  RelaxedCaptureMode relaxed;
  NCCLCHECK(device_->resume());
  transport::SuspendContext ctx{};
  ctx.rank = comm_->rank_;
  ctx.cudaDev = comm_->cudaDev_;
  ctx.commHash = comm_->commHash_;
  ctx.bootstrap = comm_->bootstrap_.get();
  ctx.abortFlag = comm_->watch_.abortFlag().hostWord();
  ctx.peers = placesOf(ctx_.comm->peers_);
  return transport::resumeConnections(ctx, share_.connections());
}

}  // namespace braid
