// A nonblocking group's connect-and-launch, run on a thread of its own so that ncclGroupEnd can
// return ncclInProgress (group.cc). Every communicator of the group holds the job; destroy and
// abort wait for it (abort first raises the abort flag, which ends the connects' waits).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace braid {

class AsyncGroupJob {
 public:
  // Runs `work` on a new detached thread, which keeps the job alive until `work` has returned.
  static std::shared_ptr<AsyncGroupJob> start(std::function<void()> work);
  // Blocks until `work` has returned.
  void wait();

 private:
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
};

}  // namespace braid
