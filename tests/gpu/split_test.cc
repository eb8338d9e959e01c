// ncclCommSplit on real GPUs: 4 ranks into 2x2 (keys reversing the order) and 4x1, a rank that
// takes NCCL_SPLIT_NOCOLOR, splits of ncclCommInitAll's communicators from one thread inside a
// group, nonblocking init and split (from one thread without a group too, on 2 GPUs or more), bad
// arguments (a bad config among them) refused with the parent still working, and 100
// split/destroy cycles without device memory growing (on fewer GPUs too, as emulated hosts that
// share them). Every child is checked by an AllReduce whose exact integer sum names its members.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "child_comm_test_util.h"
#include "coll_test_util.h"
#include "gpu_test_util.h"

namespace {

using childtest::checkMembers;
using childtest::contribution;
using childtest::kCount;
using childtest::openParent;
using childtest::Parent;
using childtest::waitReady;

// A parent with a config of its own, which its children inherit.
int openConfiguredParent(int rank, int nranks, const ncclUniqueId& id, Parent* p) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "parent";
  config.maxCTAs = 8;
  return childtest::openParent(rank, nranks, id, p, &config);
}

class Split : public childtest::FourRanks {};

TEST_F(Split, TwoByTwoFourByOneAndNoColor) {
  EXPECT_EQ(0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
              Parent p;
              if (openConfiguredParent(rank, 4, id, &p) != 0) return 1;
              // 2x2: colors 0 (ranks 0, 2) and 1 (ranks 1, 3); key -rank puts the higher rank first.
              ncclComm_t half = nullptr;
              CHILD_NCCL(ncclCommSplit(p.comm, rank % 2, -rank, &half, nullptr));
              const std::vector<int> halfMembers = rank % 2 == 0 ? std::vector<int>{2, 0} : std::vector<int>{3, 1};
              if (checkMembers(half, halfMembers, rank, p) != 0) return 1;
              // 4x1: every rank alone.
              ncclComm_t alone = nullptr;
              CHILD_NCCL(ncclCommSplit(p.comm, rank, 0, &alone, nullptr));
              if (checkMembers(alone, {rank}, rank, p) != 0) return 1;
              // Rank 3 stays out; the others form one communicator in parent order.
              ncclComm_t three = nullptr;
              CHILD_NCCL(ncclCommSplit(p.comm, rank == 3 ? NCCL_SPLIT_NOCOLOR : 7, 0, &three, nullptr));
              if (rank == 3) {
                CHILD_EXPECT(three == nullptr);
              } else if (checkMembers(three, {0, 1, 2}, rank, p) != 0) {
                return 1;
              }
              // The parent still works after its children were made.
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              for (ncclComm_t c : {half, alone, three}) {
                if (c != nullptr) CHILD_NCCL(ncclCommDestroy(c));
              }
              CHILD_NCCL(ncclCommDestroy(p.comm));
              return 0;
            }));
}

TEST_F(Split, BadArgumentsAreRefusedAndTheParentKeepsWorking) {
  EXPECT_EQ(0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
              Parent p;
              if (openConfiguredParent(rank, 4, id, &p) != 0) return 1;
              ncclComm_t child = nullptr;
              CHILD_EXPECT(ncclCommSplit(p.comm, -5, 0, &child, nullptr) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommSplit(p.comm, 0, 0, nullptr, nullptr) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommSplit(nullptr, 0, 0, &child, nullptr) == ncclInvalidArgument);
              ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
              bad.minCTAs = -3;
              CHILD_EXPECT(ncclCommSplit(p.comm, 0, 0, &child, &bad) == ncclInvalidArgument);
              CHILD_EXPECT(child == nullptr);
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              CHILD_NCCL(ncclCommDestroy(p.comm));
              return 0;
            }));
}

// config.blocking = 0: init and split return at once (ncclInProgress, or ncclSuccess when already
// done), the communicators become ready in the background, and the child inherits nonblocking.
TEST_F(Split, NonblockingInitAndSplit) {
  EXPECT_EQ(0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
              ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
              config.blocking = 0;
              Parent p;
              if (openParent(rank, 4, id, &p, &config) != 0) return 1;
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              ncclComm_t child = nullptr;
              const ncclResult_t split = ncclCommSplit(p.comm, rank / 2, 0, &child, nullptr);
              CHILD_EXPECT(split == ncclInProgress || split == ncclSuccess);
              CHILD_EXPECT(child != nullptr);
              CHILD_EXPECT(waitReady(child) == ncclSuccess);
              const std::vector<int> members = rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
              if (checkMembers(child, members, rank, p) != 0) return 1;
              CHILD_NCCL(ncclCommDestroy(child));
              CHILD_NCCL(ncclCommDestroy(p.comm));
              return 0;
            }));
}

// A nonblocking communicator's group launch: the first one connects, on a background thread, so
// ncclGroupEnd returns ncclInProgress and ncclCommGetAsyncError says so until the AllReduce is
// launched; a later one needs no connect and returns ncclSuccess. A group that mixes a blocking and
// a nonblocking communicator is refused (ncclInvalidArgument, at the call and at ncclGroupEnd), as
// in NCCL.
TEST_F(Split, NonblockingGroupLaunchConnectsInTheBackground) {
  EXPECT_EQ(
      0, gputest::runRanksInProcesses(4, [](int rank, const ncclUniqueId& id) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        Parent p;
        if (openParent(rank, 4, id, &p, &config) != 0) return 1;
        std::vector<int32_t> host(kCount);
        for (size_t i = 0; i < kCount; i++) host[i] = contribution(rank, i);
        CHILD_CUDA(gputest::uploadSync(p.buf, host.data(), kCount * sizeof(int32_t)));
        CHILD_NCCL(ncclGroupStart());
        CHILD_NCCL(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream));
        CHILD_EXPECT(ncclGroupEnd() == ncclInProgress);
        CHILD_EXPECT(waitReady(p.comm) == ncclSuccess);
        CHILD_CUDA(cudaStreamSynchronize(p.stream));
        CHILD_CUDA(cudaMemcpy(host.data(), p.buf, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < kCount; i++) {
          int32_t want = 0;
          for (int r = 0; r < 4; r++) want += contribution(r, i);
          CHILD_EXPECT(host[i] == want);
        }
        // Connected now: launched at once.
        CHILD_EXPECT(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream) == ncclSuccess);
        CHILD_CUDA(cudaStreamSynchronize(p.stream));
        // A blocking child in the same group as its nonblocking parent.
        ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
        blocking.blocking = 1;
        ncclComm_t child = nullptr;
        const ncclResult_t split = ncclCommSplit(p.comm, 0, rank, &child, &blocking);
        CHILD_EXPECT(split == ncclSuccess || split == ncclInProgress);
        CHILD_EXPECT(waitReady(child) == ncclSuccess);
        CHILD_NCCL(ncclGroupStart());
        CHILD_NCCL(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, p.comm, p.stream));
        CHILD_EXPECT(ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, child, p.stream) == ncclInvalidArgument);
        CHILD_EXPECT(ncclGroupEnd() == ncclInvalidArgument);  // the refused call fails the group: nothing launched
        CHILD_CUDA(cudaStreamSynchronize(p.stream));
        CHILD_NCCL(ncclCommDestroy(child));
        CHILD_NCCL(ncclCommDestroy(p.comm));
        return 0;
      }));
}

// Sums AllReduces over every GPU's buffer from one thread (comms[r] on GPU r; null: none) and
// checks that GPU r's result is the sum of the contributions of `members[r]` (parent ranks). A
// nonblocking group may launch in the background; a blocking one must launch at ncclGroupEnd.
int allReduceAndCheck(const std::vector<ncclComm_t>& comms, const std::vector<std::vector<int>>& members,
                      bool nonblocking) {
  const int n = static_cast<int>(comms.size());
  std::vector<int32_t*> bufs(n, nullptr);
  std::vector<cudaStream_t> streams(n, nullptr);
  std::vector<int32_t> host(kCount);
  for (int r = 0; r < n; r++) {
    if (comms[r] == nullptr) continue;
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(cudaStreamCreate(&streams[r]));
    CHILD_CUDA(cudaMalloc(&bufs[r], kCount * sizeof(int32_t)));
    for (size_t i = 0; i < kCount; i++) host[i] = contribution(r, i);
    CHILD_CUDA(gputest::uploadSync(bufs[r], host.data(), kCount * sizeof(int32_t)));
  }
  CHILD_NCCL(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    if (comms[r] != nullptr) {
      CHILD_NCCL(ncclAllReduce(bufs[r], bufs[r], kCount, ncclInt32, ncclSum, comms[r], streams[r]));
    }
  }
  const ncclResult_t launched = ncclGroupEnd();
  CHILD_EXPECT(launched == ncclSuccess || (nonblocking && launched == ncclInProgress));
  for (int r = 0; r < n; r++) {
    if (comms[r] == nullptr) continue;
    CHILD_EXPECT(waitReady(comms[r]) == ncclSuccess);
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(cudaStreamSynchronize(streams[r]));
    CHILD_CUDA(cudaMemcpy(host.data(), bufs[r], kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kCount; i++) {
      int32_t want = 0;
      for (int m : members[r]) want += contribution(m, i);
      if (host[i] != want) {
        std::fprintf(stderr, "GPU %d: element %zu is %d, expected %d\n", r, i, host[i], want);
        return 1;
      }
    }
    CHILD_CUDA(cudaFree(bufs[r]));
    CHILD_CUDA(cudaStreamDestroy(streams[r]));
  }
  return 0;
}

// ncclCommInitAll's four communicators, split from one thread inside one group.
TEST_F(Split, GroupedSplitsFromOneThread) {
  if (childtest::hostPerRank()) GTEST_SKIP() << "ncclCommInitAll needs a GPU per rank";
  EXPECT_EQ(0, gputest::runInChild([] {
              std::vector<ncclComm_t> parents(4);
              CHILD_NCCL(ncclCommInitAll(parents.data(), 4, nullptr));
              std::vector<ncclComm_t> children(4, nullptr);
              CHILD_NCCL(ncclGroupStart());
              for (int r = 0; r < 4; r++) CHILD_NCCL(ncclCommSplit(parents[r], r / 2, r, &children[r], nullptr));
              CHILD_NCCL(ncclGroupEnd());
              std::vector<std::vector<int>> members(4);
              for (int r = 0; r < 4; r++) {
                int count = 0;
                CHILD_NCCL(ncclCommCount(children[r], &count));
                CHILD_EXPECT(count == 2);
                members[r] = {r / 2 * 2, r / 2 * 2 + 1};
              }
              if (allReduceAndCheck(children, members, false) != 0) return 1;
              for (int r = 0; r < 4; r++) {
                CHILD_NCCL(ncclCommDestroy(children[r]));
                CHILD_NCCL(ncclCommDestroy(parents[r]));
              }
              return 0;
            }));
}

// Nonblocking parents split from one thread without a group, as NCCL allows: each ncclCommSplit
// returns at once (ncclInProgress; NCCL 2.28 answers ncclSuccess) while its exchange over the
// parent runs in the background, waiting for the other ranks' calls; the parent reports
// ncclInProgress and refuses other calls until the split is done, then works again. Keys reverse
// the order; a second round leaves the last rank out (NCCL_SPLIT_NOCOLOR), whose parent is polled
// the same way. 2 or 4 GPUs.
TEST(SplitFromOneThread, NonblockingSplitsWithoutAGroup) {
  const int n = gputest::gpuCount() >= 4 ? 4 : 2;
  if (gputest::gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runInChild([n] {
              alarm(120);
              ncclUniqueId id;
              CHILD_NCCL(ncclGetUniqueId(&id));
              ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
              config.blocking = 0;
              std::vector<ncclComm_t> parents(n, nullptr);
              for (int r = 0; r < n; r++) {
                CHILD_CUDA(cudaSetDevice(r));
                const ncclResult_t init = ncclCommInitRankConfig(&parents[r], n, id, r, &config);
                CHILD_EXPECT(init == ncclInProgress || init == ncclSuccess);
              }
              for (ncclComm_t parent : parents) CHILD_EXPECT(waitReady(parent) == ncclSuccess);

              std::vector<ncclComm_t> children(n, nullptr);
              for (int r = 0; r < n; r++) {
                const ncclResult_t split = ncclCommSplit(parents[r], 0, n - 1 - r, &children[r], nullptr);
                CHILD_EXPECT(split == ncclInProgress || split == ncclSuccess);
                if (r == 0) {  // the other ranks have not called yet: rank 0's exchange cannot be done
                  ncclResult_t state = ncclSuccess;
                  CHILD_NCCL(ncclCommGetAsyncError(parents[0], &state));
                  CHILD_EXPECT(state == ncclInProgress);
                  // NCCL refuses these too, but then keeps ncclInvalidArgument as the parent's
                  // asynchronous error; Braid's refusal leaves the parent as it was.
                  if (colltest::againstReference()) continue;
                  ncclComm_t again = nullptr;
                  CHILD_EXPECT(ncclCommSplit(parents[0], 0, 0, &again, nullptr) == ncclInvalidArgument);
                  CHILD_EXPECT(ncclCommFinalize(parents[0]) == ncclInvalidArgument);
                }
              }
              for (int r = 0; r < n; r++) {
                CHILD_EXPECT(waitReady(parents[r]) == ncclSuccess);
                CHILD_EXPECT(children[r] != nullptr);  // NCCL sets it only now; Braid at the call
                CHILD_EXPECT(waitReady(children[r]) == ncclSuccess);
                int rank = -1;
                CHILD_NCCL(ncclCommUserRank(children[r], &rank));
                CHILD_EXPECT(rank == n - 1 - r);
              }
              std::vector<int> everyone(n);
              for (int r = 0; r < n; r++) everyone[r] = r;
              if (allReduceAndCheck(children, std::vector<std::vector<int>>(n, everyone), true) != 0) return 1;

              std::vector<ncclComm_t> fewer(n, nullptr);
              for (int r = 0; r < n; r++) {
                const int color = r == n - 1 ? NCCL_SPLIT_NOCOLOR : 0;
                const ncclResult_t split = ncclCommSplit(parents[r], color, r, &fewer[r], nullptr);
                CHILD_EXPECT(split == ncclInProgress || split == ncclSuccess);
              }
              for (ncclComm_t parent : parents) CHILD_EXPECT(waitReady(parent) == ncclSuccess);
              CHILD_EXPECT(fewer[n - 1] == nullptr);
              std::vector<int> notLast(everyone.begin(), everyone.end() - 1);
              if (allReduceAndCheck(fewer, std::vector<std::vector<int>>(n, notLast), true) != 0) return 1;
              if (allReduceAndCheck(parents, std::vector<std::vector<int>>(n, everyone), true) != 0) return 1;
              for (int r = 0; r < n; r++) {
                if (fewer[r] != nullptr) CHILD_NCCL(ncclCommDestroy(fewer[r]));
                CHILD_NCCL(ncclCommDestroy(children[r]));
                CHILD_NCCL(ncclCommDestroy(parents[r]));
              }
              return 0;
            }));
}

// Split, use and destroy 100 times, halves (even cycles) and one child of every rank (odd
// cycles): device memory after the cycles is what it was after the first ones (a child that kept
// its connections or buffers would grow it every cycle). 4 ranks: on 4 GPUs one host; with fewer,
// emulated hosts that share the GPUs (their children connect over the network). Memory is read
// after an AllReduce of the parent, when every rank has destroyed its child.
TEST(SplitCycles, HundredSplitDestroyCyclesLeaveNoMemoryBehind) {
  const std::vector<int> hostSizes = gputest::emulatedHostSizes(4);
  if (gputest::gpuCount() < 4 && hostSizes.empty()) GTEST_SKIP() << "4 ranks do not fit this machine";
  const int perHost = gputest::gpuCount() >= 4 ? 0 : hostSizes.front();
  colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
  EXPECT_EQ(0, gputest::runRanksInProcesses(4, [perHost](int rank, const ncclUniqueId& id) {
              if (perHost > 0) gputest::enterEmulatedHost(rank / perHost);
              Parent p;
              if (openConfiguredParent(rank, 4, id, &p) != 0) return 1;
              constexpr int kCycles = 100, kWarmup = 10;
              size_t freeAfterWarmup = 0;
              size_t total = 0;
              for (int cycle = 0; cycle < kCycles; cycle++) {
                const bool halves = cycle % 2 == 0;
                ncclComm_t child = nullptr;
                CHILD_NCCL(ncclCommSplit(p.comm, halves ? rank % 2 : 7, 0, &child, nullptr));
                std::vector<int> members = {0, 1, 2, 3};
                if (halves) members = rank % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
                if (checkMembers(child, members, rank, p) != 0) return 1;
                CHILD_NCCL(ncclCommDestroy(child));
                if (cycle == kWarmup - 1) {
                  if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
                  CHILD_CUDA(cudaMemGetInfo(&freeAfterWarmup, &total));
                }
              }
              if (checkMembers(p.comm, {0, 1, 2, 3}, rank, p) != 0) return 1;
              size_t freeAtEnd = 0;
              CHILD_CUDA(cudaMemGetInfo(&freeAtEnd, &total));
              if (freeAtEnd + (8u << 20) < freeAfterWarmup) {
                std::fprintf(stderr, "rank %d: %zu bytes of device memory lost over %d cycles\n", rank,
                             freeAfterWarmup - freeAtEnd, kCycles - kWarmup);
                return 1;
              }
              std::fprintf(stderr, "rank %d: device memory after %d cycles: %+lld bytes\n", rank, kCycles - kWarmup,
                           static_cast<long long>(freeAfterWarmup) - static_cast<long long>(freeAtEnd));
              CHILD_NCCL(ncclCommDestroy(p.comm));
              return 0;
            }));
}

}  // namespace
