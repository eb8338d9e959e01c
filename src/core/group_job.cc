#include "core/group_job.h"

#include <system_error>
#include <thread>
#include <utility>

#include "util/log.h"
#include "util/thread_guard.h"

namespace braid {

std::shared_ptr<AsyncGroupJob> AsyncGroupJob::start(std::function<void()> work) {
  auto job = std::make_shared<AsyncGroupJob>();
  auto body = [job, work = std::move(work)] {
    // `work` reports its own errors; a throw must still end the job, or destroy would wait forever.
    (void)guardThread("nonblocking group", work);
    {
      std::lock_guard<std::mutex> lock(job->mutex_);
      job->done_ = true;
    }
    job->finished_.notify_all();
  };
  try {
    std::thread(body).detach();
  } catch (const std::system_error& e) {
    // No thread to spare: run it here. The call blocks, but the group ends with its real result.
    WARN("Cannot start a thread for a nonblocking group (%s); running it in this call", e.what());
    body();
  }
  return job;
}

void AsyncGroupJob::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [this] { return done_; });
}

}  // namespace braid
