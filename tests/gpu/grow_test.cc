// ncclCommGetUniqueId + ncclCommGrow: a communicator of `from` ranks grows to `to`; the existing ranks
// keep their numbers, the new ones join with the coordinator's id (handed over a pipe, as a job would
// hand it out of band), and every collective and send/receive on the grown communicator is exact.
// Ranks as processes and as threads. Also the misuse: a second id before the first is used, no id at
// all, bad ranks and sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "every_collective.h"
#include "gpu_test_util.h"

namespace {

using gputest::runEveryCollective;
using gputest::runInChild;

// One rank of a grow from `from` to `to` ranks. Ranks below `from` make the parent with `id`; rank 0
// also makes the grow id and writes it to the joining ranks' pipes.
int growRank(int rank, int from, int to, const ncclUniqueId& id, const std::vector<int>& pipes) {
  CHILD_CUDA(cudaSetDevice(rank));
  ncclComm_t grown = nullptr;
  if (rank < from) {
    ncclComm_t parent = nullptr;
    CHILD_NCCL(ncclCommInitRank(&parent, from, id, rank));
    ncclUniqueId growId;
    if (rank == 0) {
      CHILD_NCCL(ncclCommGetUniqueId(parent, &growId));
      ncclUniqueId second;
      CHILD_EXPECT(ncclCommGetUniqueId(parent, &second) == ncclInvalidUsage);  // one id per grow
      for (int r = from; r < to; ++r) {
        CHILD_EXPECT(write(pipes[2 * r + 1], &growId, sizeof(growId)) == sizeof(growId));
      }
    }
    CHILD_EXPECT(ncclCommGrow(parent, to, nullptr, rank, &grown, nullptr) == ncclInvalidArgument);  // rank != -1
    CHILD_EXPECT(ncclCommGrow(parent, from, nullptr, -1, &grown, nullptr) == ncclInvalidArgument);  // no growth
    // The coordinator passes its id, the others NULL (the coordinator could pass NULL too).
    CHILD_NCCL(ncclCommGrow(parent, to, rank == 0 ? &growId : nullptr, -1, &grown, nullptr));
    CHILD_NCCL(ncclCommDestroy(parent));
  } else {
    ncclUniqueId growId;
    CHILD_EXPECT(read(pipes[2 * rank], &growId, sizeof(growId)) == sizeof(growId));
    CHILD_EXPECT(ncclCommGrow(nullptr, to, nullptr, rank, &grown, nullptr) == ncclInvalidArgument);  // no id
    CHILD_EXPECT(ncclCommGrow(nullptr, to, &growId, to, &grown, nullptr) == ncclInvalidArgument);    // bad rank
    CHILD_NCCL(ncclCommGrow(nullptr, to, &growId, rank, &grown, nullptr));
  }
  int count = 0, user = -1;
  CHILD_NCCL(ncclCommCount(grown, &count));
  CHILD_NCCL(ncclCommUserRank(grown, &user));
  CHILD_EXPECT(count == to && user == rank);
  if (runEveryCollective(grown, to, rank) != 0) return 1;
  CHILD_NCCL(ncclCommDestroy(grown));
  return 0;
}

struct GrowCase {
  int from;
  int to;
};

void runGrow(GrowCase c, bool processes) {
  if (gputest::gpuCount() < c.to) GTEST_SKIP() << "needs " << c.to << " GPUs";
  std::vector<int> pipes(2 * c.to);
  for (int r = 0; r < c.to; ++r) ASSERT_EQ(0, pipe(&pipes[2 * r]));
  auto body = [&](int rank, const ncclUniqueId& id) { return growRank(rank, c.from, c.to, id, pipes); };
  if (processes) {
    EXPECT_EQ(0, gputest::runRanksInProcesses(c.to, body));
  } else {
    EXPECT_EQ(0, runInChild([&] { return gputest::runRanksInThreads(c.to, body); }));
  }
  for (int fd : pipes) close(fd);
}

TEST(Grow, TwoToFourProcesses) { runGrow({2, 4}, true); }
TEST(Grow, TwoToFourThreads) { runGrow({2, 4}, false); }
TEST(Grow, OneToThreeProcesses) { runGrow({1, 3}, true); }
TEST(Grow, OneToTwoThreads) { runGrow({1, 2}, false); }

// Without ncclCommGetUniqueId on any rank, the existing ranks have no id to agree on.
TEST(Grow, NoIdIsRefused) {
  EXPECT_EQ(0, runInChild([] {
              CHILD_CUDA(cudaSetDevice(0));
              ncclComm_t parent = nullptr;
              CHILD_NCCL(ncclCommInitAll(&parent, 1, nullptr));
              ncclComm_t grown = nullptr;
              CHILD_EXPECT(ncclCommGrow(parent, 2, nullptr, -1, &grown, nullptr) == ncclInvalidUsage);
              CHILD_EXPECT(grown == nullptr);
              CHILD_EXPECT(std::string(ncclGetLastError(nullptr)).find("ncclCommGetUniqueId") != std::string::npos);
              CHILD_NCCL(ncclCommDestroy(parent));
              return 0;
            }));
}

}  // namespace
