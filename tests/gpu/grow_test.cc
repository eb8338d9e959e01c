// ncclCommGetUniqueId + ncclCommGrow: a communicator of `from` ranks grows to `to`; the existing ranks
// keep their numbers, the new ones join with the coordinator's id (handed over a pipe, as a job would
// hand it out of band), and every collective and send/receive on the grown communicator is exact.
// Ranks as processes and as threads. Also the misuse: a second id before the first is used, no id at
// all, bad ranks and sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.h"

namespace {

using gputest::runInChild;

// Element i of rank r's input for a collective numbered `op`: different per rank, op and element.
int32_t valueOf(int op, int rank, size_t i) {
  uint32_t x = static_cast<uint32_t>(op * 1000003 + rank * 7919 + static_cast<int>(i) * 31 + 17);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  return static_cast<int32_t>(x >> 8);  // small enough that sums over 8 ranks do not overflow
}

struct Buffers {
  int32_t* send = nullptr;
  int32_t* recv = nullptr;
  std::vector<int32_t> host;
  size_t elems = 0;
};

int upload(Buffers* b, int op, int rank, size_t n) {
  std::vector<int32_t> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = valueOf(op, rank, i);
  CHILD_CUDA(gputest::uploadSync(b->send, in.data(), n * sizeof(int32_t)));
  CHILD_CUDA(gputest::poisonSync(b->recv, 0xa5, b->elems * sizeof(int32_t)));
  return 0;
}

int download(Buffers* b, cudaStream_t s, size_t n) {
  CHILD_CUDA(cudaStreamSynchronize(s));
  b->host.resize(n);
  CHILD_CUDA(cudaMemcpy(b->host.data(), b->recv, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  return 0;
}

// Every collective and a send/receive ring on `comm` (n ranks, this one `rank`), checked exactly.
int runEveryCollective(ncclComm_t comm, int n, int rank) {
  const size_t count = 1000 + 3;  // odd, and more than one line of every protocol
  Buffers b;
  b.elems = count * n;
  CHILD_CUDA(cudaMalloc(&b.send, b.elems * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&b.recv, b.elems * sizeof(int32_t)));
  cudaStream_t s;
  CHILD_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int root = n - 1;  // a joined rank

  if (upload(&b, 1, rank, count) != 0) return 1;
  CHILD_NCCL(ncclAllReduce(b.send, b.recv, count, ncclInt32, ncclSum, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += valueOf(1, r, i);
    CHILD_EXPECT(b.host[i] == static_cast<int32_t>(sum));
  }

  if (upload(&b, 2, rank, count) != 0) return 1;
  CHILD_NCCL(ncclBroadcast(b.send, b.recv, count, ncclInt32, root, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[i] == valueOf(2, root, i));

  if (upload(&b, 3, rank, count) != 0) return 1;
  CHILD_NCCL(ncclReduce(b.send, b.recv, count, ncclInt32, ncclMax, root, comm, s));
  if (download(&b, s, count) != 0) return 1;
  if (rank == root) {
    for (size_t i = 0; i < count; ++i) {
      int32_t m = valueOf(3, 0, i);
      for (int r = 1; r < n; ++r) m = std::max(m, valueOf(3, r, i));
      CHILD_EXPECT(b.host[i] == m);
    }
  }

  if (upload(&b, 4, rank, count) != 0) return 1;
  CHILD_NCCL(ncclAllGather(b.send, b.recv, count, ncclInt32, comm, s));
  if (download(&b, s, count * n) != 0) return 1;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[r * count + i] == valueOf(4, r, i));
  }

  if (upload(&b, 5, rank, count * n) != 0) return 1;
  CHILD_NCCL(ncclReduceScatter(b.send, b.recv, count, ncclInt32, ncclSum, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += valueOf(5, r, rank * count + i);
    CHILD_EXPECT(b.host[i] == static_cast<int32_t>(sum));
  }

  if (upload(&b, 6, rank, count * n) != 0) return 1;
  CHILD_NCCL(ncclAlltoAll(b.send, b.recv, count, ncclInt32, comm, s));
  if (download(&b, s, count * n) != 0) return 1;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[r * count + i] == valueOf(6, r, rank * count + i));
  }

  if (upload(&b, 7, rank, count) != 0) return 1;
  CHILD_NCCL(ncclGather(b.send, b.recv, count, ncclInt32, root, comm, s));
  if (download(&b, s, count * n) != 0) return 1;
  if (rank == root) {
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[r * count + i] == valueOf(7, r, i));
    }
  }

  if (upload(&b, 8, rank, count * n) != 0) return 1;
  CHILD_NCCL(ncclScatter(b.send, b.recv, count, ncclInt32, 0, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[i] == valueOf(8, 0, rank * count + i));

  // A ring: everyone sends to the next rank and receives from the previous one.
  if (upload(&b, 9, rank, count) != 0) return 1;
  CHILD_NCCL(ncclGroupStart());
  CHILD_NCCL(ncclSend(b.send, count, ncclInt32, (rank + 1) % n, comm, s));
  CHILD_NCCL(ncclRecv(b.recv, count, ncclInt32, (rank + n - 1) % n, comm, s));
  CHILD_NCCL(ncclGroupEnd());
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[i] == valueOf(9, (rank + n - 1) % n, i));

  CHILD_CUDA(cudaStreamDestroy(s));
  CHILD_CUDA(cudaFree(b.send));
  CHILD_CUDA(cudaFree(b.recv));
  return 0;
}

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
