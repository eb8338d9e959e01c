// The group rules that need no GPU, on communicators whose data path is a fake that counts what it
// is asked to do:
//   - a call refused inside a group fails the whole group at its outermost ncclGroupEnd, and none
//     of its operations launch (NCCL's rule; launching the rest would leave peers waiting);
//   - a nonblocking communicator still in progress refuses new work with ncclInvalidArgument (as
//     NCCL's ncclCommEnsureReady does), never ncclInProgress, which a caller reads as "accepted";
//   - work deferred to the outermost End runs one communicator's jobs in order on one thread and
//     different communicators' at the same time (their peers may be driven by this thread).
#include "core/group.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "core/comm_registry.h"
#include "launch/red_ops.h"

namespace braid {
namespace {

// These tests queue nothing through the API: an operation side that takes nothing.
class NoOperations : public OperationSink {
 public:
  void enqueue(const CollTask&) override {}
  void enqueueP2p(const P2pTask&) override {}
  cudaEvent_t queuedP2pLaunchEvent() const override { return nullptr; }
  ncclResult_t registerBuffer(void*, size_t, void**) override { return ncclInvalidUsage; }
  ncclResult_t deregisterBuffer(void*) override { return ncclInvalidUsage; }
  UserRedOps& redOps() override { return redOps_; }

 private:
  UserRedOps redOps_;
};

class CountingDataPath : public DataPathBase {
 public:
  OperationSink& operations() override { return operations_; }
  bool needsConnect(ConnectScope) const override { return false; }
  ncclResult_t connect(ConnectScope) override { return ncclSuccess; }
  ncclResult_t launchPending() override {
    launched++;
    return ncclSuccess;
  }
  ncclResult_t simulatePending(double* us) override {
    *us = 0.0;
    return ncclSuccess;
  }
  void dropPending() override { dropped++; }
  ncclResult_t waitIdle(const IdleWaitCheck&) override { return ncclSuccess; }
  void kernelsAborted() override {}
  ncclResult_t joinShareGroup(const std::shared_ptr<ShareGroup>&) override { return ncclSuccess; }
  MemoryStats memoryStats() const override { return {}; }
  bool suspendable(std::string*) const override { return true; }
  ncclResult_t suspendMemory() override { return ncclSuccess; }
  ncclResult_t resumeMemory() override { return ncclSuccess; }
  ncclResult_t kernelAbortWord(uint32_t** out) override {
    *out = nullptr;
    return ncclSuccess;
  }
  ncclResult_t openNetwork(net::Network** out) override {
    *out = nullptr;
    return ncclInternalError;
  }

  int launched = 0;
  int dropped = 0;

 private:
  NoOperations operations_;
};

// A live (registered) communicator with a counting data path.
struct FakeComm {
  FakeComm() {
    comm.rank_ = 0;
    comm.nranks_ = 2;
    comm.state_ = CommState::kReady;
    comm.asyncError_ = ncclSuccess;
    auto owned = std::make_unique<CountingDataPath>();
    path = owned.get();
    comm.dataPath_ = std::move(owned);
    commRegistryAdd(&comm);
  }
  ~FakeComm() { commRegistryRemove(&comm); }
  ncclComm comm;
  CountingDataPath* path = nullptr;
};

// Communicator A's two jobs run in order (the second sees the first done); B's job meets A's first
// (each waits for the other), which only concurrent lanes allow.
TEST(Group, DeferredJobsRunInOrderPerCommunicatorAndConcurrentlyAcross) {
  int a = 0, b = 0;
  std::atomic<int> aStarted{0}, bStarted{0};
  std::atomic<bool> firstDone{false};
  std::vector<int> order;
  const auto waitFor = [](const std::atomic<int>& flag) {
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (flag.load() == 0 && std::chrono::steady_clock::now() < giveUp) std::this_thread::yield();
    return flag.load() != 0;
  };
  GroupContext& group = GroupContext::current();
  group.start();
  group.deferInit(
      &a,
      [&] {
        aStarted = 1;
        if (!waitFor(bStarted)) return ncclInternalError;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        order.push_back(1);
        firstDone = true;
        return ncclSuccess;
      },
      [] {});
  group.deferInit(
      &b,
      [&] {
        bStarted = 1;
        return waitFor(aStarted) ? ncclSuccess : ncclInternalError;
      },
      [] {});
  group.deferInit(
      &a,
      [&] {
        order.push_back(firstDone ? 2 : -2);
        return ncclSuccess;
      },
      [] {});
  EXPECT_EQ(ncclSuccess, group.end());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// A failed job: the rest of its communicator's are skipped, every other communicator's cancelled.
TEST(Group, AFailedDeferredJobSkipsItsCommunicatorsRestAndCancelsTheOthers) {
  int a = 0, b = 0;
  std::atomic<int> laterRan{0}, bCancelled{0}, aCancelled{0};
  GroupContext& group = GroupContext::current();
  group.start();
  group.deferInit(
      &a, [] { return ncclRemoteError; }, [&] { aCancelled++; });
  group.deferInit(
      &a,
      [&] {
        laterRan++;
        return ncclSuccess;
      },
      [&] { aCancelled++; });
  group.deferInit(
      &b, [] { return ncclSuccess; }, [&] { bCancelled++; });
  EXPECT_EQ(ncclRemoteError, group.end());
  EXPECT_EQ(0, laterRan.load());
  EXPECT_EQ(0, aCancelled.load());
  EXPECT_EQ(1, bCancelled.load());
}

TEST(Group, ARefusedCallFailsTheGroupAndLaunchesNothing) {
  FakeComm a;
  FakeComm b;
  GroupContext& group = GroupContext::current();
  group.start();
  group.addPendingLaunch(&a.comm);
  group.noteRefusedCall(ncclInvalidArgument);
  group.addPendingLaunch(&b.comm);  // queued after the refused call: dropped too
  EXPECT_EQ(ncclInvalidArgument, group.end());
  EXPECT_FALSE(group.active());
  EXPECT_EQ(0, a.path->launched + b.path->launched);
  EXPECT_EQ(1, a.path->dropped);
  EXPECT_EQ(1, b.path->dropped);

  // The next group starts clean.
  group.start();
  group.addPendingLaunch(&a.comm);
  EXPECT_EQ(ncclSuccess, group.end());
  EXPECT_EQ(1, a.path->launched);
}

TEST(Group, ARefusalInANestedGroupFailsTheOutermostEndWithTheFirstError) {
  FakeComm a;
  GroupContext& group = GroupContext::current();
  group.start();
  group.addPendingLaunch(&a.comm);
  group.start();
  group.noteRefusedCall(ncclInvalidUsage);
  group.noteRefusedCall(ncclInvalidArgument);  // not the first: not reported
  EXPECT_EQ(ncclSuccess, group.end());         // inner level: only counts down
  EXPECT_EQ(0, a.path->dropped);
  EXPECT_EQ(ncclInvalidUsage, group.end());
  EXPECT_EQ(0, a.path->launched);
  EXPECT_EQ(1, a.path->dropped);
}

TEST(Group, ARefusalOutsideAGroupLeavesTheNextGroupAlone) {
  FakeComm a;
  GroupContext& group = GroupContext::current();
  group.noteRefusedCall(ncclInvalidArgument);  // an ungrouped call: it alone was refused
  group.start();
  group.addPendingLaunch(&a.comm);
  EXPECT_EQ(ncclSuccess, group.end());
  EXPECT_EQ(1, a.path->launched);
}

TEST(Group, ANonblockingCommunicatorInProgressRefusesWorkWithInvalidArgument) {
  FakeComm a;
  a.comm.config_.blocking = 0;
  a.comm.asyncError_ = ncclInProgress;  // a group launch connecting in the background
  EXPECT_EQ(ncclInvalidArgument, commCheckUsable(&a.comm, "ncclAllReduce"));
  a.comm.state_ = CommState::kInitializing;  // its creation still running
  EXPECT_EQ(ncclInvalidArgument, commCheckUsable(&a.comm, "ncclSend"));
  a.comm.state_ = CommState::kReady;
  a.comm.asyncError_ = ncclSuccess;
  EXPECT_EQ(ncclSuccess, commCheckUsable(&a.comm, "ncclSend"));
  // A blocking communicator used before its grouped creation ended: misuse, as before.
  a.comm.config_.blocking = 1;
  a.comm.state_ = CommState::kInitializing;
  EXPECT_EQ(ncclInvalidUsage, commCheckUsable(&a.comm, "ncclSend"));
  a.comm.state_ = CommState::kReady;
}

}  // namespace
}  // namespace braid
