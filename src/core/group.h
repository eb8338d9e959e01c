// The per-thread group context: ncclGroupStart/End nesting and the work deferred to the outermost
// ncclGroupEnd. It is one explicit object per thread, not scattered thread_locals.
#pragma once

#include <nccl.h>

#include <functional>
#include <vector>

struct ncclComm;

namespace braid {

class GroupContext {
 public:
  // This thread's context.
  static GroupContext& current();

  bool active() const { return depth_ > 0; }
  int depth() const { return depth_; }
  void start() { depth_++; }
  // Ends one level; at the outermost level runs the deferred work and returns its first error.
  // With `estimatedUs` (ncclGroupSimulateEnd), the outermost level makes the collectives'
  // connections and deferred inits as ncclGroupEnd would, but launches nothing: the queued
  // operations are estimated and dropped, and the estimate is stored there (slowest GPU of the
  // group; 0 for a group without operations). An inner level leaves it untouched.
  [[nodiscard]] ncclResult_t end(double* estimatedUs = nullptr);

  // Work that must wait for the outermost End, on behalf of communicator `comm` (the one whose
  // peers it meets). Jobs of different communicators run concurrently, each communicator's on its
  // own thread, so that the ranks of one communicator driven from this thread can meet each other;
  // one communicator's jobs run in the order they were deferred, since each is collective on it
  // and its peers meet them in that order. When one job fails, the rest of its communicator's are
  // skipped and `cancel` of every other communicator's job is called so that they stop waiting.
  void deferInit(const void* comm, std::function<ncclResult_t()> job, std::function<void()> cancel) {
    initJobs_.push_back(DeferredJob{comm, std::move(job), std::move(cancel)});
  }

  // A communicator whose data path queued operations in this group; the outermost End connects it
  // if needed (concurrently with the other communicators of the group) and launches its queue.
  // When the group's communicators are nonblocking and one of them needs connecting, End does that
  // and the launches on a background thread (AsyncGroupJob) and returns ncclInProgress; each
  // communicator's ncclCommGetAsyncError says ncclInProgress until they are done.
  void addPendingLaunch(ncclComm* comm);
  // Before queuing an operation of `comm`: a group holds blocking or nonblocking communicators, not
  // both (ncclInvalidArgument with a WARN naming `caller`, as NCCL).
  [[nodiscard]] ncclResult_t checkBlockingMatches(const ncclComm* comm, const char* caller) const;
  // A call that would have queued an operation in this group was refused (`result`). As in NCCL, the
  // outermost End then launches none of the group's operations and returns the first such error:
  // launching the rest would leave the peers of the refused one waiting, or matched against the
  // wrong operation. Outside a group it changes nothing (the call alone was refused).
  void noteRefusedCall(ncclResult_t result);

 private:
  struct DeferredJob {
    const void* comm;
    std::function<ncclResult_t()> run;
    std::function<void()> cancel;
  };
  [[nodiscard]] static ncclResult_t runConcurrently(std::vector<DeferredJob>& jobs);
  [[nodiscard]] static ncclResult_t launchComms(const std::vector<ncclComm*>& comms, double* estimatedUs);
  // Whether the pending launches go to a background thread (see addPendingLaunch).
  bool launchesInBackground() const;
  [[nodiscard]] ncclResult_t launchInBackground();
  // Drops the queued operations of a group with a refused call; its first error.
  [[nodiscard]] ncclResult_t dropRefusedGroup();

  int depth_ = 0;
  std::vector<DeferredJob> initJobs_;
  std::vector<ncclComm*> pendingLaunches_;
  ncclResult_t refused_ = ncclSuccess;  // the first refused call's error, until the outermost End
};

}  // namespace braid
