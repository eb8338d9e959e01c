#include "core/group.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "core/comm.h"
#include "util/log.h"

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

  std::vector<DeferredJob> jobs;
  jobs.swap(initJobs_);
  ncclResult_t initResult = runConcurrently(jobs);
  ncclResult_t launchResult = launchPending(estimatedUs);
  return initResult != ncclSuccess ? initResult : launchResult;
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
ncclResult_t GroupContext::launchPending(double* estimatedUs) {
  std::vector<ncclComm*> comms;
  comms.swap(pendingLaunches_);
  if (estimatedUs != nullptr) *estimatedUs = 0.0;
  if (comms.empty()) return ncclSuccess;

  using Scope = DataPathBase::ConnectScope;
  const Scope scope = estimatedUs != nullptr ? Scope::kCollectives : Scope::kAll;
  std::vector<DeferredJob> connects;
  for (ncclComm* comm : comms) {
    if (!comm->dataPath_->needsConnect(scope)) continue;
    connects.push_back(
        DeferredJob{[comm, scope] { return comm->dataPath_->connect(scope); }, [comm] { comm->abortFlag_ = 1; }});
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
  if (jobs.size() == 1) return jobs[0].run();

  // The first failure is the one to report: the others are usually the cancellations it caused.
  ncclResult_t firstError = ncclSuccess;
  std::atomic<bool> cancelled{false};
  std::vector<std::thread> threads;
  threads.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); i++) {
    threads.emplace_back([&, i] {
      ncclResult_t result = jobs[i].run();
      if (result != ncclSuccess && !cancelled.exchange(true)) {
        firstError = result;
        for (size_t j = 0; j < jobs.size(); j++) {
          if (j != i) jobs[j].cancel();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return firstError;
}

}  // namespace braid
