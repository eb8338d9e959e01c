#include "core/group.h"

#include <atomic>
#include <thread>

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
  return runConcurrently(jobs);
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
