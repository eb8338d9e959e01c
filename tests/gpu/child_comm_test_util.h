// Shared by the split and shrink GPU tests: a parent communicator per process (one GPU per rank)
// with a stream and a buffer, and an exact check of a communicator's members: an integer AllReduce
// whose sum says which parent ranks took part, and in which child rank order.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

namespace childtest {

// Whether openParent puts each rank on an emulated host of its own (see FourRanks). Set before the
// ranks' processes are forked, which inherit it.
inline bool& hostPerRank() {
  static bool on = false;
  return on;
}

// The split and shrink tests run 4 ranks: on 4 GPUs, one host; with fewer GPUs (where they fit),
// 4 emulated hosts of one rank that share the GPUs (hostPerRank), so that the parents and their
// children connect over the socket network on loopback.
class FourRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    hostPerRank() = false;
    if (gputest::gpuCount() >= 4) return;
    if (!gputest::emulatedHostsFit(4, 1)) GTEST_SKIP() << "4 ranks do not fit this machine";
    hostPerRank() = true;
  }
  void TearDown() override { hostPerRank() = false; }
};

// Tests that need the 4 ranks on one host: 4 GPUs.
class FourGpus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < 4) GTEST_SKIP() << "needs 4 GPUs";
  }
};

constexpr size_t kCount = 1 << 20;  // large enough that no rank finishes without its peers

// Parent rank r contributes (r + 1) * 100 + i % 100 at element i.
inline int32_t contribution(int parentRank, size_t i) { return (parentRank + 1) * 100 + static_cast<int32_t>(i % 100); }

struct Parent {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int32_t* buf = nullptr;  // kCount elements
};

// Polls a nonblocking communicator until its creation, or its group's background launch, has
// finished; its final state.
inline ncclResult_t waitReady(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  for (int i = 0; i < 60000 && state == ncclInProgress; i++) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

// config may be null. A nonblocking one's init may return ncclInProgress (or ncclSuccess when it
// was quick); the communicator is polled until it is ready.
inline int openParent(int rank, int nranks, const ncclUniqueId& id, Parent* p, ncclConfig_t* config = nullptr) {
  if (hostPerRank()) {
    gputest::enterEmulatedHost(rank);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  }
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(rank)));
  CHILD_CUDA(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking));
  CHILD_CUDA(cudaMalloc(&p->buf, kCount * sizeof(int32_t)));
  const ncclResult_t init = ncclCommInitRankConfig(&p->comm, nranks, id, rank, config);
  if (config == nullptr || config->blocking != 0) {
    CHILD_NCCL(init);
    return 0;
  }
  CHILD_EXPECT(init == ncclInProgress || init == ncclSuccess);
  CHILD_EXPECT(p->comm != nullptr);
  CHILD_EXPECT(waitReady(p->comm) == ncclSuccess);
  return 0;
}

// An AllReduce on `comm`, whose ranks are the parent ranks `members` in this order, checked exactly;
// this process is parent rank `parentRank`.
inline int checkMembers(ncclComm_t comm, const std::vector<int>& members, int parentRank, const Parent& p) {
  int count = 0;
  int rank = -1;
  CHILD_NCCL(ncclCommCount(comm, &count));
  CHILD_NCCL(ncclCommUserRank(comm, &rank));
  CHILD_EXPECT(count == static_cast<int>(members.size()));
  CHILD_EXPECT(rank >= 0 && rank < count && members[rank] == parentRank);
  std::vector<int32_t> host(kCount);
  for (size_t i = 0; i < kCount; i++) host[i] = contribution(parentRank, i);
  CHILD_CUDA(gputest::uploadSync(p.buf, host.data(), kCount * sizeof(int32_t)));
  // A nonblocking communicator's first collective connects in the background: ncclInProgress
  // until its group has launched.
  const ncclResult_t launched = ncclAllReduce(p.buf, p.buf, kCount, ncclInt32, ncclSum, comm, p.stream);
  CHILD_EXPECT(launched == ncclSuccess || launched == ncclInProgress);
  if (launched == ncclInProgress) CHILD_EXPECT(waitReady(comm) == ncclSuccess);
  CHILD_CUDA(cudaStreamSynchronize(p.stream));
  CHILD_CUDA(cudaMemcpy(host.data(), p.buf, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kCount; i++) {
    int32_t want = 0;
    for (int m : members) want += contribution(m, i);
    if (host[i] != want) {
      std::fprintf(stderr, "parent rank %d: element %zu is %d, expected %d\n", parentRank, i, host[i], want);
      return 1;
    }
  }
  return 0;
}

}  // namespace childtest
