// ncclCommSplit with splitShare = 1 (and ncclCommShrink with shrinkShare = 1, last test) on real
// GPUs, every GPU one rank in its own process. The parent
// is split twice before its first operation: into a child that shares its connections and one that
// does not (both of all the parent's ranks). Then:
//   - memory: the parent's first AllReduce and ring exchange make its connections; the sharing
//     child's first ones reuse its ring, direct and point-to-point connections (device memory grows
//     by less than an eighth of what the other child's allocate, which is more than 32 MiB);
//   - order: the parent and the sharing child, on two streams and without a synchronization
//     between them, run 10 rounds each of a large and a small in-place AllReduce (the small one by
//     the direct algorithm where it applies) and a ring exchange, interleaved. They share
//     FIFOs and step counters, so a kernel of one running beside a kernel of the other, or a step
//     count not carried from one to the other, corrupts or hangs them. Every result is checked
//     exactly.
// The last tests split and shrink a parent that has run operations, and captured one in a graph,
// before: it lends its connections all the same.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "gpu_test_util.h"

namespace {

constexpr size_t kCount = 1 << 20;  // int32 elements of the AllReduce; the exchange moves as many bytes x 4
constexpr int kRounds = 10;
constexpr size_t kSmallCount = 256;  // an AllReduce small enough for the direct algorithm

struct Member {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int32_t* sum = nullptr;      // the in-place AllReduce's buffer
  int32_t* small = nullptr;    // the small one's (kSmallCount elements)
  uint8_t* send = nullptr;     // the ring exchange's send buffer
  std::vector<uint8_t*> recv;  // one receive buffer per round
  uint8_t tag = 0;             // makes this member's bytes its own
};

int openMember(ncclComm_t comm, uint8_t tag, Member* m) {
  m->comm = comm;
  m->tag = tag;
  CHILD_CUDA(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
  CHILD_CUDA(cudaMalloc(&m->sum, kCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&m->small, kSmallCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&m->send, kCount * sizeof(int32_t)));
  m->recv.resize(kRounds);
  for (uint8_t*& r : m->recv) {
    CHILD_CUDA(cudaMalloc(&r, kCount * sizeof(int32_t)));
    CHILD_CUDA(cudaMemset(r, 0xee, kCount * sizeof(int32_t)));  // poisoned
  }
  return 0;
}

// Element i of rank r's AllReduce input.
int32_t input(int rank, size_t i) { return rank + 1 + static_cast<int32_t>(i % 7); }

int fillInput(int rank, const Member& m) {
  std::vector<int32_t> host(kCount);
  for (size_t i = 0; i < kCount; i++) host[i] = input(rank, i);
  CHILD_CUDA(gputest::uploadSync(m.sum, host.data(), kCount * sizeof(int32_t)));
  CHILD_CUDA(gputest::uploadSync(m.small, host.data(), kSmallCount * sizeof(int32_t)));
  return 0;
}

// The byte rank `sender` sends in round `round` of member `tag`'s exchange.
uint8_t exchangeByte(int sender, int round, uint8_t tag) { return static_cast<uint8_t>(sender * 31 + round * 2 + tag); }

// Round `round`: two in-place AllReduces (a large and a small one), then a send to the next rank
// and a receive from the previous.
int enqueueRound(int rank, int n, int round, const Member& m) {
  CHILD_NCCL(ncclAllReduce(m.sum, m.sum, kCount, ncclInt32, ncclSum, m.comm, m.stream));
  CHILD_NCCL(ncclAllReduce(m.small, m.small, kSmallCount, ncclInt32, ncclSum, m.comm, m.stream));
  CHILD_CUDA(cudaMemsetAsync(m.send, exchangeByte(rank, round, m.tag), kCount * sizeof(int32_t), m.stream));
  CHILD_NCCL(ncclGroupStart());
  CHILD_NCCL(ncclSend(m.send, kCount * sizeof(int32_t), ncclUint8, (rank + 1) % n, m.comm, m.stream));
  CHILD_NCCL(ncclRecv(m.recv[round], kCount * sizeof(int32_t), ncclUint8, (rank + n - 1) % n, m.comm, m.stream));
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// After `allReduces` in-place AllReduces the large buffer holds the sum of the inputs times
// n^(allReduces - 1) (wrapping like int32 arithmetic), and the small one the same after `rounds`;
// after `rounds` exchanges receive buffer r holds the previous rank's bytes of round r.
int checkRounds(int rank, int n, int allReduces, int rounds, const Member& m) {
  CHILD_CUDA(cudaStreamSynchronize(m.stream));
  std::vector<int32_t> host(kCount + kSmallCount);
  CHILD_CUDA(cudaMemcpy(host.data(), m.sum, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  CHILD_CUDA(cudaMemcpy(host.data() + kCount, m.small, kSmallCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kCount + kSmallCount; i++) {
    const size_t element = i < kCount ? i : i - kCount;
    const int times = i < kCount ? allReduces : rounds;  // the small one runs once per round
    uint32_t expected = 0;
    for (int r = 0; r < n; r++) expected += static_cast<uint32_t>(input(r, element));
    for (int k = 1; k < times; k++) expected *= static_cast<uint32_t>(n);
    if (static_cast<uint32_t>(host[i]) != expected) {
      std::fprintf(stderr, "rank %d member %d: %s[%zu] = %d, expected %u\n", rank, m.tag, i < kCount ? "sum" : "small",
                   element, host[i], expected);
      return 1;
    }
  }
  std::vector<uint8_t> bytes(kCount * sizeof(int32_t));
  const int prev = (rank + n - 1) % n;
  for (int round = 0; round < rounds; round++) {
    CHILD_CUDA(cudaMemcpy(bytes.data(), m.recv[round], bytes.size(), cudaMemcpyDeviceToHost));
    const uint8_t want = exchangeByte(prev, round, m.tag);
    for (size_t b = 0; b < bytes.size(); b++) {
      if (bytes[b] != want) {
        std::fprintf(stderr, "rank %d member %d round %d: byte %zu is %u, expected %u\n", rank, m.tag, round, b,
                     bytes[b], want);
        return 1;
      }
    }
  }
  return 0;
}

int64_t freeBytes() {
  size_t free = 0;
  size_t total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(free);
}

// In a rank's process: its GPU and the parent communicator of all n ranks; 0 on success.
int openParent(int n, int rank, const ncclUniqueId& id, ncclComm_t* parent) {
  alarm(120);
  CHILD_CUDA(cudaSetDevice(rank));
  CHILD_NCCL(ncclCommInitRank(parent, n, id, rank));
  return 0;
}

void closeMember(Member* m) {
  for (uint8_t* r : m->recv) (void)cudaFree(r);
  (void)cudaFree(m->send);
  (void)cudaFree(m->sum);
  (void)cudaFree(m->small);
  (void)cudaStreamDestroy(m->stream);
}

TEST(SplitShare, AChildThatSharesReusesItsParentsConnectionsAndRunsInOrderWithIt) {
  const int n = gputest::allGpuRanks();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(
      0, gputest::runRanksInProcesses(n, [n](int rank, const ncclUniqueId& id) {
        ncclComm_t parentComm = nullptr;
        if (openParent(n, rank, id, &parentComm) != 0) return 1;
        ncclConfig_t share = NCCL_CONFIG_INITIALIZER;
        share.splitShare = 1;
        ncclConfig_t own = NCCL_CONFIG_INITIALIZER;
        own.splitShare = 0;
        ncclComm_t sharingComm = nullptr;
        ncclComm_t ownComm = nullptr;
        CHILD_NCCL(ncclCommSplit(parentComm, 0, rank, &sharingComm, &share));
        CHILD_NCCL(ncclCommSplit(parentComm, 0, rank, &ownComm, &own));
        Member parent, sharing, separate;
        if (openMember(parentComm, 0, &parent) != 0 || openMember(sharingComm, 1, &sharing) != 0 ||
            openMember(ownComm, 2, &separate) != 0) {
          return 1;
        }
        for (const Member* m : {&parent, &sharing, &separate}) {
          if (fillInput(rank, *m) != 0) return 1;
        }

        // Memory: the first round of each makes (or reuses) its connections.
        if (enqueueRound(rank, n, 0, parent) != 0) return 1;
        CHILD_CUDA(cudaStreamSynchronize(parent.stream));
        const int64_t beforeSharing = freeBytes();
        if (enqueueRound(rank, n, 0, sharing) != 0) return 1;
        CHILD_CUDA(cudaStreamSynchronize(sharing.stream));
        const int64_t afterSharing = freeBytes();
        if (enqueueRound(rank, n, 0, separate) != 0) return 1;
        CHILD_CUDA(cudaStreamSynchronize(separate.stream));
        const int64_t afterSeparate = freeBytes();
        const int64_t sharedGrowth = beforeSharing - afterSharing;
        const int64_t ownGrowth = afterSharing - afterSeparate;
        std::fprintf(stderr, "rank %d: device memory of a first round: sharing child %.1f MiB, own child %.1f MiB\n",
                     rank, sharedGrowth / 1048576.0, ownGrowth / 1048576.0);
        // What the sharing child still makes alone: its DevComm and the arrays beside it.
        CHILD_EXPECT(ownGrowth > (32 << 20));
        CHILD_EXPECT(sharedGrowth < ownGrowth / 8);

        // Order: interleaved on two streams, nothing between them.
        for (int round = 1; round < kRounds; round++) {
          if (enqueueRound(rank, n, round, parent) != 0) return 1;
          if (enqueueRound(rank, n, round, sharing) != 0) return 1;
        }
        if (checkRounds(rank, n, kRounds, kRounds, parent) != 0 ||
            checkRounds(rank, n, kRounds, kRounds, sharing) != 0 || checkRounds(rank, n, 1, 1, separate) != 0) {
          return 1;
        }
        // The parent goes first; the child keeps the connections it shares alive.
        CHILD_NCCL(ncclCommDestroy(parentComm));
        CHILD_NCCL(ncclAllReduce(sharing.sum, sharing.sum, kCount, ncclInt32, ncclSum, sharingComm, sharing.stream));
        if (checkRounds(rank, n, kRounds + 1, kRounds, sharing) != 0) return 1;
        CHILD_NCCL(ncclCommDestroy(sharingComm));
        CHILD_NCCL(ncclCommDestroy(ownComm));
        for (Member* m : {&parent, &sharing, &separate}) closeMember(m);
        return 0;
      }));
}

// ncclCommShrink with shrinkShare = 1 (excluding nobody) joins the share group a sharing split made
// its parent a member of: its first round takes (almost) no device memory, and it runs in order
// with the parent.
TEST(SplitShare, AShrunkChildThatSharesJoinsItsParentsGroup) {
  const int n = gputest::allGpuRanks();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runRanksInProcesses(n, [n](int rank, const ncclUniqueId& id) {
              ncclComm_t parentComm = nullptr;
              if (openParent(n, rank, id, &parentComm) != 0) return 1;
              ncclConfig_t share = NCCL_CONFIG_INITIALIZER;
              share.splitShare = 1;
              share.shrinkShare = 1;
              ncclComm_t splitComm = nullptr;
              CHILD_NCCL(ncclCommSplit(parentComm, 0, rank, &splitComm, &share));  // makes the parent a member
              ncclComm_t shrunkComm = nullptr;
              CHILD_NCCL(ncclCommShrink(parentComm, nullptr, 0, &shrunkComm, &share, NCCL_SHRINK_DEFAULT));
              Member parent, shrunk;
              if (openMember(parentComm, 0, &parent) != 0 || openMember(shrunkComm, 3, &shrunk) != 0) return 1;
              if (fillInput(rank, parent) != 0 || fillInput(rank, shrunk) != 0) return 1;
              if (enqueueRound(rank, n, 0, parent) != 0) return 1;
              CHILD_CUDA(cudaStreamSynchronize(parent.stream));
              const int64_t before = freeBytes();
              if (enqueueRound(rank, n, 0, shrunk) != 0) return 1;
              CHILD_CUDA(cudaStreamSynchronize(shrunk.stream));
              const int64_t growth = before - freeBytes();
              std::fprintf(stderr, "rank %d: device memory of the shrunk child's first round: %.1f MiB\n", rank,
                           growth / 1048576.0);
              CHILD_EXPECT(growth < (16 << 20));  // a child of its own takes hundreds (290 MiB on 2 H200)
              for (int round = 1; round < kRounds; round++) {
                if (enqueueRound(rank, n, round, shrunk) != 0) return 1;
                if (enqueueRound(rank, n, round, parent) != 0) return 1;
              }
              if (checkRounds(rank, n, kRounds, kRounds, parent) != 0 ||
                  checkRounds(rank, n, kRounds, kRounds, shrunk) != 0) {
                return 1;
              }
              CHILD_NCCL(ncclCommDestroy(shrunkComm));
              CHILD_NCCL(ncclCommDestroy(splitComm));
              CHILD_NCCL(ncclCommDestroy(parentComm));
              closeMember(&parent);
              closeMember(&shrunk);
              return 0;
            }));
}

// A parent that ran operations before its first sharing split or shrink (PyTorch's world group has
// run at least a barrier) lends its connections: the child's first round takes (almost) no device
// memory. The parent keeps its step counters where an AllReduce it captured in a CUDA graph before
// the split reads them; then the parent's rounds, the child's rounds and replays of that graph run
// interleaved on three streams, nothing between them, and every result is exact.
int lendingParentRanks(int n, int rank, const ncclUniqueId& id, bool viaShrink) {
  ncclComm_t parentComm = nullptr;
  if (openParent(n, rank, id, &parentComm) != 0) return 1;
  Member parent, child;
  if (openMember(parentComm, 0, &parent) != 0 || fillInput(rank, parent) != 0) return 1;
  // The graph: an in-place AllReduce of the small buffer's size on a buffer of its own.
  int32_t* graphSum = nullptr;
  cudaStream_t graphStream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  CHILD_CUDA(cudaMalloc(&graphSum, kSmallCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMemcpy(graphSum, parent.small, kSmallCount * sizeof(int32_t), cudaMemcpyDeviceToDevice));
  if (enqueueRound(rank, n, 0, parent) != 0) return 1;
  CHILD_CUDA(cudaStreamCreateWithFlags(&graphStream, cudaStreamNonBlocking));
  CHILD_CUDA(cudaStreamBeginCapture(graphStream, cudaStreamCaptureModeThreadLocal));
  CHILD_NCCL(ncclAllReduce(graphSum, graphSum, kSmallCount, ncclInt32, ncclSum, parentComm, graphStream));
  CHILD_CUDA(cudaStreamEndCapture(graphStream, &graph));
  CHILD_CUDA(cudaGraphInstantiate(&graphExec, graph, 0));
  CHILD_CUDA(cudaStreamSynchronize(parent.stream));

  ncclConfig_t share = NCCL_CONFIG_INITIALIZER;
  share.splitShare = 1;
  share.shrinkShare = 1;
  ncclComm_t childComm = nullptr;
  if (viaShrink) {
    CHILD_NCCL(ncclCommShrink(parentComm, nullptr, 0, &childComm, &share, NCCL_SHRINK_DEFAULT));
  } else {
    CHILD_NCCL(ncclCommSplit(parentComm, 0, rank, &childComm, &share));
  }
  if (openMember(childComm, 4, &child) != 0 || fillInput(rank, child) != 0) return 1;
  const int64_t before = freeBytes();
  if (enqueueRound(rank, n, 0, child) != 0) return 1;
  CHILD_CUDA(cudaStreamSynchronize(child.stream));
  const int64_t growth = before - freeBytes();
  std::fprintf(stderr, "rank %d: device memory of the first round of a child of a busy parent (%s): %.1f MiB\n", rank,
               viaShrink ? "shrink" : "split", growth / 1048576.0);
  CHILD_EXPECT(growth < (16 << 20));  // a child of its own takes hundreds (290 MiB on 2 H200)

  constexpr int kReplays = kRounds - 1;
  for (int round = 1; round < kRounds; round++) {
    if (enqueueRound(rank, n, round, child) != 0) return 1;
    CHILD_CUDA(cudaGraphLaunch(graphExec, graphStream));
    if (enqueueRound(rank, n, round, parent) != 0) return 1;
  }
  if (checkRounds(rank, n, kRounds, kRounds, parent) != 0 || checkRounds(rank, n, kRounds, kRounds, child) != 0) {
    return 1;
  }
  CHILD_CUDA(cudaStreamSynchronize(graphStream));
  std::vector<int32_t> host(kSmallCount);
  CHILD_CUDA(cudaMemcpy(host.data(), graphSum, kSmallCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kSmallCount; i++) {
    uint32_t expected = 0;
    for (int r = 0; r < n; r++) expected += static_cast<uint32_t>(input(r, i));
    for (int k = 1; k < kReplays; k++) expected *= static_cast<uint32_t>(n);
    if (static_cast<uint32_t>(host[i]) != expected) {
      std::fprintf(stderr, "rank %d: graph sum[%zu] = %d after %d replays, expected %u\n", rank, i, host[i], kReplays,
                   expected);
      return 1;
    }
  }
  CHILD_CUDA(cudaGraphExecDestroy(graphExec));
  CHILD_CUDA(cudaGraphDestroy(graph));
  // The parent goes first; its step fields stay alive for the child's next AllReduce.
  CHILD_NCCL(ncclCommDestroy(parentComm));
  CHILD_NCCL(ncclAllReduce(child.sum, child.sum, kCount, ncclInt32, ncclSum, childComm, child.stream));
  if (checkRounds(rank, n, kRounds + 1, kRounds, child) != 0) return 1;
  CHILD_NCCL(ncclCommDestroy(childComm));
  (void)cudaFree(graphSum);
  (void)cudaStreamDestroy(graphStream);
  closeMember(&parent);
  closeMember(&child);
  return 0;
}

TEST(SplitShare, AParentThatRanOperationsLendsItsConnectionsAtItsFirstSharingSplit) {
  const int n = gputest::allGpuRanks();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runRanksInProcesses(
                   n, [n](int rank, const ncclUniqueId& id) { return lendingParentRanks(n, rank, id, false); }));
}

TEST(SplitShare, AParentThatRanOperationsLendsItsConnectionsAtASharingShrink) {
  const int n = gputest::allGpuRanks();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runRanksInProcesses(
                   n, [n](int rank, const ncclUniqueId& id) { return lendingParentRanks(n, rank, id, true); }));
}

}  // namespace
