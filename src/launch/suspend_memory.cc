// The data path's part of ncclCommSuspend / ncclCommResume (core/suspend.h): the connections'
// device blocks (transport/suspend.h) and the staging memory go, and come back at the same
// addresses; DevComm, the ring orders and the point-to-point tables (a few KiB) stay, so the
// kernels that CUDA graphs captured before the suspension run unchanged after the resume.
#include "cuda/capture_mode.h"
#include "cuda/scoped_device.h"
#include "launch/comm_data_path.h"
#include "transport/suspend.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

std::vector<const transport::Connections*> connectionList(
    const std::vector<std::shared_ptr<transport::Connections>>& connections) {
  std::vector<const transport::Connections*> list;
  list.reserve(connections.size());
  for (const auto& conns : connections) list.push_back(conns.get());
  return list;
}

}  // namespace

DataPathBase::MemoryStats CommDataPath::memoryStats() const {
  const transport::BlockBytes blocks = transport::ownDeviceBytes(connectionList(connections_));
  MemoryStats stats;
  stats.suspendable = blocks.suspendable + device_->suspendableBytes();
  stats.persistent = blocks.persistent + device_->persistentBytes();
  return stats;
}

bool CommDataPath::suspendable(std::string* why) const {
  if (group_ != nullptr) {
    // Its connections are other communicators' too (ncclCommSplit with splitShare), as NCCL refuses.
    *why = "it shares connections with other communicators (split with splitShare)";
    return false;
  }
  return transport::connectionsSuspendable(connectionList(connections_), why) && device_->suspendable(why);
}

ncclResult_t CommDataPath::suspendMemory() {
  ScopedDevice device(comm_->cudaDev_);
  RelaxedCaptureMode relaxed;  // another thread may be capturing a graph meanwhile
  NCCLCHECK(transport::suspendConnections(connectionList(connections_)));
  return device_->suspend();
}

ncclResult_t CommDataPath::resumeMemory() {
  ScopedDevice device(comm_->cudaDev_);
  RelaxedCaptureMode relaxed;
  NCCLCHECK(device_->resume());
  transport::SuspendContext ctx{comm_->rank_, comm_->cudaDev_, comm_->commHash_, comm_->bootstrap_.get(),
                                &comm_->abortFlag_};
  return transport::resumeConnections(ctx, connectionList(connections_));
}

}  // namespace braid
