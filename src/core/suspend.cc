#include "core/suspend.h"

#include <string>
#include <vector>

#include "core/comm.h"
#include "core/group.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

// Both calls block until every rank takes part, which one thread driving several ranks inside a
// group cannot do.
ncclResult_t refuseInGroup(const ncclComm* comm, const char* caller) {
  if (!GroupContext::current().active()) return ncclSuccess;
  WARN("%s: comm %p (rank %d): called inside ncclGroupStart/End; call it outside a group, from each rank's thread",
       caller, static_cast<const void*>(comm), comm->rank_);
  return ncclInvalidUsage;
}

// Every rank learns whether every rank can suspend (one barrier, after each finished its work):
// all suspend, or none.
ncclResult_t agreeToSuspend(ncclComm* comm, bool canHere, const std::string& why) {
  std::vector<int> can(static_cast<size_t>(comm->nranks_), 0);
  can[static_cast<size_t>(comm->rank_)] = canHere ? 1 : 0;
  NCCLCHECK(comm->bootstrap_->allGather(can.data(), sizeof(int)));
  for (int r = 0; r < comm->nranks_; ++r) {
    if (can[static_cast<size_t>(r)] != 0) continue;
    if (r == comm->rank_) {
      WARN("ncclCommSuspend: comm %p rank %d cannot be suspended: %s", static_cast<void*>(comm), r, why.c_str());
    } else {
      WARN("ncclCommSuspend: comm %p rank %d: rank %d cannot be suspended (its log says why); nothing suspended",
           static_cast<void*>(comm), comm->rank_, r);
    }
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

DataPathBase::MemoryStats statsOf(const ncclComm* comm) {
  return comm->dataPath_ != nullptr ? comm->dataPath_->memoryStats() : DataPathBase::MemoryStats{};
}

}  // namespace

ncclResult_t commSuspend(ncclComm* comm, int flags) {
  const char* caller = "ncclCommSuspend";
  NCCLCHECK(commCheckUsable(comm, caller));
  if ((flags & ~NCCL_SUSPEND_MEM) != 0) {
    WARN("%s: flags 0x%x has bits other than NCCL_SUSPEND_MEM (0x%x)", caller, flags, NCCL_SUSPEND_MEM);
    return ncclInvalidArgument;
  }
  if ((flags & NCCL_SUSPEND_MEM) == 0) return ncclSuccess;  // nothing asked to be suspended
  NCCLCHECK(refuseInGroup(comm, caller));
  ScopedDevice device(comm->cudaDev_);
  std::string why;
  bool can = true;
  if (comm->dataPath_ != nullptr) {
    NCCLCHECK(comm->dataPath_->waitIdle(peerFailureCheck(comm)));
    can = comm->dataPath_->suspendable(&why);
  }
  NCCLCHECK(agreeToSuspend(comm, can, why));
  const DataPathBase::MemoryStats stats = statsOf(comm);
  if (comm->dataPath_ != nullptr) {
    const ncclResult_t result = comm->dataPath_->suspendMemory();
    if (result != ncclSuccess) {
      // Part of its memory may be gone: no further operation may run on it.
      comm->suspended_ = true;
      WARN("%s: comm %p rank %d: suspending failed part way; destroy or abort the communicator", caller,
           static_cast<void*>(comm), comm->rank_);
      return result;
    }
  }
  comm->suspended_ = true;
  INFO(kLogInit | kLogAlloc, "%s: comm %p rank %d suspended: %llu bytes of device memory let go, %llu stay", caller,
       static_cast<void*>(comm), comm->rank_, static_cast<unsigned long long>(stats.suspendable),
       static_cast<unsigned long long>(stats.persistent));
  return ncclSuccess;
}

ncclResult_t commResume(ncclComm* comm) {
  const char* caller = "ncclCommResume";
  NCCLCHECK(commCheckHandle(comm, caller));
  if (comm->state_.load() != CommState::kReady || !comm->suspended_.load()) {
    WARN("%s: comm %p (rank %d) is not suspended", caller, static_cast<void*>(comm), comm->rank_);
    return ncclInvalidUsage;
  }
  NCCLCHECK(refuseInGroup(comm, caller));
  if (comm->dataPath_ != nullptr) {
    ScopedDevice device(comm->cudaDev_);
    NCCLCHECK(comm->dataPath_->resumeMemory());
  }
  comm->suspended_ = false;
  INFO(kLogInit | kLogAlloc, "%s: comm %p rank %d resumed", caller, static_cast<void*>(comm), comm->rank_);
  return ncclSuccess;
}

ncclResult_t commMemStats(ncclComm* comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* caller = "ncclCommMemStats";
  NCCLCHECK(commCheckHandle(comm, caller));
  if (value == nullptr) {
    WARN("%s: value is NULL", caller);
    return ncclInvalidArgument;
  }
  // Sizes of what the communicator holds when active, suspended or not (as NCCL reports them).
  const DataPathBase::MemoryStats stats = statsOf(comm);
  switch (stat) {
    case ncclStatGpuMemSuspend:
      *value = stats.suspendable;
      return ncclSuccess;
    case ncclStatGpuMemSuspended:
      *value = comm->suspended_.load() ? 1 : 0;
      return ncclSuccess;
    case ncclStatGpuMemPersist:
      *value = stats.persistent;
      return ncclSuccess;
    case ncclStatGpuMemTotal:
      *value = stats.suspendable + stats.persistent;
      return ncclSuccess;
  }
  WARN("%s: stat %d is not an ncclCommMemStat_t", caller, static_cast<int>(stat));
  return ncclInvalidArgument;
}

}  // namespace braid
