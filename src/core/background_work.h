// The work a communicator runs on other threads, which its destroy and abort wait for before they
// free what that work uses: a nonblocking creation, a nonblocking parent's part of a split or
// shrink (core/child_comm.h), and a nonblocking group's connect-and-launch (core/group_job.h).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "core/group_job.h"

namespace braid {

class BackgroundWork {
 public:
  BackgroundWork() = default;
  BackgroundWork(const BackgroundWork&) = delete;
  BackgroundWork& operator=(const BackgroundWork&) = delete;
  ~BackgroundWork() = default;  // freeComm has waited for everything (release, in core/lifecycle.cc)

  // Runs `body` on the creation thread; where no thread can be made, runs it in this call (with a
  // WARN naming `what`): the caller blocks, but the work still ends.
  void startCreation(const char* what, const std::function<void()>& body);
  bool hasCreationThread() const { return creation_.joinable(); }  // started, not yet joined
  void joinCreation();

  // A parent's exchange is counted from before its work starts (beginExchange) until it has ended
  // (endExchange), on whichever thread runs it; the parent refuses other calls meanwhile.
  void beginExchange() { exchanges_++; }
  void endExchange() { exchanges_--; }
  bool exchangeRunning() const { return exchanges_.load() != 0; }
  // Runs `body` (which ends with endExchange) on the parent's own exchange thread, after joining
  // the earlier one; in this call where no thread can be made.
  void startExchange(const char* what, const std::function<void()>& body);
  // Waits until no exchange runs, and joins the exchange thread. An exchange that runs on a
  // child's creation thread ends within NCCL_BOOTSTRAP_TIMEOUT, or at once at the abort flag.
  void joinExchanges();

  // The latest nonblocking group that included the communicator.
  void setGroupJob(std::shared_ptr<AsyncGroupJob> job) { groupJob_ = std::move(job); }
  void waitGroupJob();

 private:
  std::thread creation_;
  std::atomic<int> exchanges_{0};
  std::thread exchange_;
  std::shared_ptr<AsyncGroupJob> groupJob_;
};

}  // namespace braid
