#include "core/group.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <system_error>
#include <thread>

#include "core/comm.h"
#include "core/group_job.h"
#include "util/log.h"
#include "util/text.h"
#include "util/thread_guard.h"

namespace braid {

GroupContext& GroupContext::current() {
  thread_local GroupContext context;
  return context;
}

ncclResult_t GroupContext::end(double* estimatedUs) {
  if (depth_ == 0) {
    WARN("ncclGroupEnd: not inside a group (ncclGroupEnd without a matching ncclGroupStart)");
    return ncclInvalidUsage;
  }
  if (--depth_ > 0) return ncclSuccess;

  // Deferred inits run even in a group with a refused call: the other ranks of a communicator
  // being created wait for this one, and its handle must become usable or destroyable.
  std::vector<DeferredJob> jobs;
  jobs.swap(initJobs_);
  ncclResult_t initResult = runConcurrently(jobs);
  if (refused_ != ncclSuccess) return dropRefusedGroup();
  if (initResult == ncclSuccess && estimatedUs == nullptr && launchesInBackground()) return launchInBackground();
  std::vector<ncclComm*> comms;
  comms.swap(pendingLaunches_);
  ncclResult_t launchResult = launchComms(comms, estimatedUs);
  return initResult != ncclSuccess ? initResult : launchResult;
}

ncclResult_t GroupContext::checkBlockingMatches(const ncclComm* comm, const char* caller) const {
  if (pendingLaunches_.empty() || pendingLaunches_[0]->config_.blocking == comm->config_.blocking) return ncclSuccess;
  WARN("%s: comm %p is %s, but this group already holds %s communicator %p; a group takes one kind only", caller,
       static_cast<const void*>(comm), comm->config_.blocking != 0 ? "blocking" : "nonblocking",
       pendingLaunches_[0]->config_.blocking != 0 ? "the blocking" : "the nonblocking",
       static_cast<const void*>(pendingLaunches_[0]));
  return ncclInvalidArgument;
}

void GroupContext::noteRefusedCall(ncclResult_t result) {
  if (active() && refused_ == ncclSuccess && result != ncclSuccess) refused_ = result;
}

ncclResult_t GroupContext::dropRefusedGroup() {
  const ncclResult_t result = refused_;
  refused_ = ncclSuccess;
  std::vector<ncclComm*> comms;
  comms.swap(pendingLaunches_);
  for (ncclComm* comm : comms) comm->dataPath_->dropPending();
  WARN(
      "ncclGroupEnd: a call in this group was refused (%s); none of the group's operations were launched, on %zu "
      "communicator(s)",
      resultText(result), comms.size());
  return result;
}

// Only connecting takes long (the ranks meet); launches alone stay on the caller's thread.
bool GroupContext::launchesInBackground() const {
  if (pendingLaunches_.empty() || pendingLaunches_[0]->config_.blocking != 0) return false;
  for (ncclComm* comm : pendingLaunches_) {
    if (comm->dataPath_->needsConnect(DataPathBase::ConnectScope::kAll)) return true;
  }
  return false;
}

ncclResult_t GroupContext::launchInBackground() {
  std::vector<ncclComm*> comms;
  comms.swap(pendingLaunches_);
  for (ncclComm* comm : comms) comm->asyncError_ = ncclInProgress;
  std::shared_ptr<AsyncGroupJob> job = AsyncGroupJob::start([comms] {
    const ncclResult_t result = guardThread("nonblocking group", [&] { return launchComms(comms, nullptr); });
    for (ncclComm* comm : comms) {
      ncclResult_t expected = ncclInProgress;  // a dead peer's error, set meanwhile, stays
      comm->asyncError_.compare_exchange_strong(expected, result);
    }
  });
  for (ncclComm* comm : comms) comm->background_.setGroupJob(job);
  return ncclInProgress;
}

void GroupContext::addPendingLaunch(ncclComm* comm) {
  if (std::find(pendingLaunches_.begin(), pendingLaunches_.end(), comm) == pendingLaunches_.end()) {
    pendingLaunches_.push_back(comm);
  }
}

// Connections are made first, for every communicator of the group at once: the ranks of one
// communicator may all be driven by this thread, and each connect waits for its peers. Launches
// follow in the order the communicators were first used. A simulation (estimatedUs) connects only
// the collectives, then estimates instead of launching: communicators on one GPU run one after
// another, different GPUs at the same time.
ncclResult_t GroupContext::launchComms(const std::vector<ncclComm*>& comms, double* estimatedUs) {
  if (estimatedUs != nullptr) *estimatedUs = 0.0;
  if (comms.empty()) return ncclSuccess;

  using Scope = DataPathBase::ConnectScope;
  const Scope scope = estimatedUs != nullptr ? Scope::kCollectives : Scope::kAll;
  std::vector<DeferredJob> connects;
  for (ncclComm* comm : comms) {
    if (!comm->dataPath_->needsConnect(scope)) continue;
    connects.push_back(DeferredJob{comm, [comm, scope] { return comm->dataPath_->connect(scope); },
                                   [comm] { comm->watch_.abortFlag().raise(watch::kAbortHostWaits); }});
  }
  ncclResult_t result = runConcurrently(connects);
  std::map<int, double> usPerGpu;
  for (ncclComm* comm : comms) {
    if (result != ncclSuccess) {
      comm->dataPath_->dropPending();
    } else if (estimatedUs == nullptr) {
      result = comm->dataPath_->launchPending();
    } else {
      double us = 0.0;
      result = comm->dataPath_->simulatePending(&us);
      usPerGpu[comm->cudaDev_] += us;
      *estimatedUs = std::max(*estimatedUs, usPerGpu[comm->cudaDev_]);
    }
  }
  return result;
}

ncclResult_t GroupContext::runConcurrently(std::vector<DeferredJob>& jobs) {
  if (jobs.empty()) return ncclSuccess;
  // One lane per communicator, its jobs in the order they were deferred.
  std::vector<std::vector<size_t>> lanes;
  std::map<const void*, size_t> laneOf;
  for (size_t i = 0; i < jobs.size(); i++) {
    auto [it, added] = laneOf.emplace(jobs[i].comm, lanes.size());
    if (added) lanes.emplace_back();
    lanes[it->second].push_back(i);
  }
  // The first failure is the one to report: the others are usually the cancellations it caused.
  ncclResult_t firstError = ncclSuccess;
  std::atomic<bool> cancelled{false};
  auto runLane = [&](size_t lane) {
    for (size_t i : lanes[lane]) {
      if (cancelled.load()) return;
      const ncclResult_t result = guardThread("group init", [&] { return jobs[i].run(); });
      if (result == ncclSuccess) continue;
      if (!cancelled.exchange(true)) {
        firstError = result;
        for (size_t j = 0; j < jobs.size(); j++) {
          if (jobs[j].comm != jobs[i].comm) jobs[j].cancel();
        }
      }
      return;
    }
  };
  if (lanes.size() == 1) {
    runLane(0);
    return firstError;
  }
  std::vector<std::thread> threads;
  threads.reserve(lanes.size());
  for (size_t lane = 0; lane < lanes.size(); lane++) {
    try {
      threads.emplace_back(runLane, lane);
    } catch (const std::system_error& e) {
      // The lanes started wait for this one's ranks: cancel them all, then join what runs.
      WARN("Cannot start a thread for communicator %zu of %zu in the group: %s", lane + 1, lanes.size(), e.what());
      if (!cancelled.exchange(true)) firstError = ncclSystemError;
      for (DeferredJob& job : jobs) job.cancel();
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  return firstError;
}

}  // namespace braid
