// A communicator's first launch of a kernel must not wait for another communicator's kernel that is
// running on the same GPU. With CUDA's lazy loading, a kernel's first launch loads it and may wait
// for the GPU to be idle; a kernel that waits for a peer whose thread is behind that launch then
// never lets it return (the thread-safety test hung in 15 of 42 runs that way). Braid loads every
// kernel at the first operation on a GPU, before any runs there (BRAID_LOAD_KERNELS).
//
// Here rank 0 of a pair (GPU 0) launches an AllReduce that waits for rank 1 (GPU 1), and rank 1
// launches its part only after a communicator of one rank on GPU 0 has returned from its first
// PreMulSum AllReduce (its only kernel), or after kHoldSeconds. That call must return at once and
// its result must be exact.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

namespace {

constexpr int kHoldSeconds = 5;
constexpr double kMaxLaunchSeconds = 1.0;
constexpr size_t kCount = 1 << 16;

enum Stage { kStarting, kLoneReady, kPairWaiting, kLoneReturned };

void waitFor(const std::atomic<int>& stage, int wanted) {
  while (stage.load() < wanted) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Rank `rank` of the pair. Its first AllReduce connects the ranks and completes; in the second,
// rank 0 waits on the GPU for rank 1, which launches late.
int pairRank(int rank, const ncclUniqueId& id, std::atomic<int>* stage) {
  CHILD_CUDA(cudaSetDevice(rank));
  if (rank == 0) waitFor(*stage, kLoneReady);  // the lone communicator is created before anything runs
  ncclComm_t comm = nullptr;
  CHILD_NCCL(ncclCommInitRank(&comm, 2, id, rank));
  cudaStream_t stream = nullptr;
  CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int32_t* buf = nullptr;
  CHILD_CUDA(cudaMalloc(&buf, sizeof(int32_t)));
  CHILD_CUDA(cudaMemsetAsync(buf, 0, sizeof(int32_t), stream));
  CHILD_NCCL(ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, comm, stream));
  CHILD_CUDA(cudaStreamSynchronize(stream));
  if (rank == 0) {
    CHILD_NCCL(ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, comm, stream));
    stage->store(kPairWaiting);
  } else {
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(kHoldSeconds);
    while (stage->load() < kLoneReturned && std::chrono::steady_clock::now() < giveUp) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHILD_NCCL(ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, comm, stream));
  }
  CHILD_CUDA(cudaStreamSynchronize(stream));
  CHILD_CUDA(cudaFree(buf));
  CHILD_CUDA(cudaStreamDestroy(stream));
  CHILD_NCCL(ncclCommDestroy(comm));
  return 0;
}

// The communicator of one rank on GPU 0: x * 3 over kCount floats, its first operation, launched
// while the pair's rank 0 waits on the GPU. Returns the seconds the call took in *launchSeconds.
int loneRank(std::atomic<int>* stage, double* launchSeconds) {
  CHILD_CUDA(cudaSetDevice(0));
  ncclComm_t comm = nullptr;
  int dev = 0;
  CHILD_NCCL(ncclCommInitAll(&comm, 1, &dev));
  cudaStream_t stream = nullptr;
  CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<float> host(kCount);
  for (size_t i = 0; i < kCount; i++) host[i] = static_cast<float>(static_cast<int>((i * 2654435761u) % 2001) - 1000);
  float* in = nullptr;
  float* out = nullptr;
  CHILD_CUDA(cudaMalloc(&in, kCount * sizeof(float)));
  CHILD_CUDA(cudaMalloc(&out, kCount * sizeof(float)));
  CHILD_CUDA(gputest::uploadSync(in, host.data(), kCount * sizeof(float)));
  CHILD_CUDA(gputest::poisonSync(out, 0xAB, kCount * sizeof(float)));
  const float scalar = 3.0F;
  ncclRedOp_t op{};
  CHILD_NCCL(ncclRedOpCreatePreMulSum(&op, const_cast<float*>(&scalar), ncclFloat, ncclScalarHostImmediate, comm));
  stage->store(kLoneReady);
  waitFor(*stage, kPairWaiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the pair's kernel is running by now
  const auto start = std::chrono::steady_clock::now();
  CHILD_NCCL(ncclAllReduce(in, out, kCount, ncclFloat, op, comm, stream));
  *launchSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stage->store(kLoneReturned);
  std::vector<float> got(kCount);
  CHILD_CUDA(cudaMemcpyAsync(got.data(), out, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHILD_CUDA(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < kCount; i++) {
    if (got[i] != host[i] * scalar) {
      std::fprintf(stderr, "element %zu: expected %g got %g\n", i, static_cast<double>(host[i] * scalar),
                   static_cast<double>(got[i]));
      return 1;
    }
  }
  CHILD_NCCL(ncclRedOpDestroy(op, comm));
  CHILD_CUDA(cudaFree(in));
  CHILD_CUDA(cudaFree(out));
  CHILD_CUDA(cudaStreamDestroy(stream));
  CHILD_NCCL(ncclCommDestroy(comm));
  return 0;
}

TEST(KernelLoading, AFirstLaunchDoesNotWaitForAnotherCommunicatorsKernel) {
  if (gputest::gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runInChild([] {
              alarm(60);
              ncclUniqueId id;
              CHILD_NCCL(ncclGetUniqueId(&id));
              std::atomic<int> stage{kStarting};
              double launchSeconds = -1;
              int loneRc = 1;
              std::vector<int> pairRcs(2, 1);
              std::thread lone([&] { loneRc = loneRank(&stage, &launchSeconds); });
              std::vector<std::thread> pair;
              pair.reserve(2);
              for (int r = 0; r < 2; r++) pair.emplace_back([&, r] { pairRcs[r] = pairRank(r, id, &stage); });
              lone.join();
              for (std::thread& t : pair) t.join();
              std::fprintf(stderr, "first PreMulSum AllReduce beside a waiting kernel: the call took %.4f s\n",
                           launchSeconds);
              CHILD_EXPECT(loneRc == 0 && pairRcs[0] == 0 && pairRcs[1] == 0);
              CHILD_EXPECT(launchSeconds >= 0 && launchSeconds < kMaxLaunchSeconds);
              return 0;
            }));
}

}  // namespace
