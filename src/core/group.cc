#include "core/group.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/comm.h"
#include "util/log.h"

namespace braid {

GroupContext& GroupContext::current() {
  thread_local GroupContext context;
  return context;
}

ncclResult_t GroupContext::end() {
  if (depth_ == 0) {
    WARN("ncclGroupEnd: not inside a group (ncclGroupEnd without a matching ncclGroupStart)");
    return ncclInvalidUsage;
  }
  if (--depth_ > 0) return ncclSuccess;

  std::vector<DeferredJob> jobs;
  jobs.swap(initJobs_);
  ncclResult_t initResult = runConcurrently(jobs);
  ncclResult_t launchResult = launchPending();
  return initResult != ncclSuccess ? initResult : launchResult;
}

void GroupContext::addPendingLaunch(ncclComm* comm) {
  if (std::find(pendingLaunches_.begin(), pendingLaunches_.end(), comm) == pendingLaunches_.end()) {
    pendingLaunches_.push_back(comm);
  }
}

// Connections are made first, for every communicator of the group at once: the ranks of one
// communicator may all be driven by this thread, and each connect waits for its peers. Launches
// follow in the order the communicators were first used.
ncclResult_t GroupContext::launchPending() {
  std::vector<ncclComm*> comms;
  comms.swap(pendingLaunches_);
  if (comms.empty()) return ncclSuccess;

  std::vector<DeferredJob> connects;
  for (ncclComm* comm : comms) {
    if (!comm->dataPath_->needsConnect()) continue;
    connects.push_back(DeferredJob{[comm] { return comm->dataPath_->connect(); }, [comm] { comm->abortFlag_ = 1; }});
  }
  ncclResult_t result = runConcurrently(connects);
  for (ncclComm* comm : comms) {
    if (result == ncclSuccess) {
      result = comm->dataPath_->launchPending();
    } else {
      comm->dataPath_->dropPending();
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
