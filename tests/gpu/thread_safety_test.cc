// Thread safety: separate threads driving separate communicators concurrently, which NCCL allows.
// Eight threads, each the only user of its own communicator (8 / nGPU communicators over every GPU,
// so each GPU serves several of them at once), run random collectives and point-to-point exchanges
// with random sizes for BRAID_THREAD_TEST_SECONDS (default 10; the GPU script asks for 60) and check
// every result exactly. The ranks of a communicator agree to stop through a Min AllReduce of their
// "keep going" flags, so they always run the same operations. A run in which no operation completes
// for kStallSeconds fails with every thread's state and stack (stall_watch.h).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "stall_watch.h"

namespace {

constexpr int kThreads = 8;
constexpr size_t kMaxCount = 1 << 16;
// Longer than set-up and clean-up of every communicator; an operation takes microseconds.
constexpr int kStallSeconds = 20;
using gputest::ThreadState;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return x;
}

int32_t value(uint64_t seed, int rank, size_t i) {
  return static_cast<int32_t>(mix(seed ^ (static_cast<uint64_t>(rank) << 40) ^ i) % 2001) - 1000;
}

int testSeconds() {
  const char* v = std::getenv("BRAID_THREAD_TEST_SECONDS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : 10;
}

enum Op { kAllReduce, kAllGather, kBroadcast, kRingShift, kNumOps };

// All eight threads meet here after their set-up and before their clean-up: cudaFree and
// communicator creation may wait for the whole GPU, which runs other threads' kernels.
class Barrier {
 public:
  void arriveAndWait() {
    std::unique_lock<std::mutex> lock(m_);
    const int round = arrived_ / kThreads;
    arrived_++;
    cv_.notify_all();
    cv_.wait(lock, [&] { return arrived_ >= (round + 1) * kThreads; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int arrived_ = 0;
};

// One thread: rank `rank` of communicator `commIndex`, until the ranks agree to stop.
int runRank(int commIndex, int rank, int n, const ncclUniqueId& id, int seconds, std::atomic<long>* ops,
            Barrier* barrier, ThreadState* state) {
  CHILD_CUDA(cudaSetDevice(rank));
  ncclComm_t comm = nullptr;
  CHILD_NCCL(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t stream = nullptr;
  CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int32_t *in = nullptr, *out = nullptr, *flag = nullptr;
  CHILD_CUDA(cudaMalloc(&in, kMaxCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&out, n * kMaxCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&flag, sizeof(int32_t)));
  // Pinned host memory and asynchronous copies only: pageable copies go through staging buffers
  // that the GPU's threads share, and one waiting behind another communicator's kernel could block
  // this thread before it launches what that kernel waits for (NVIDIA's NCCL hangs the same way).
  int32_t *host = nullptr, *got = nullptr, *goOnHost = nullptr;
  CHILD_CUDA(cudaMallocHost(&host, kMaxCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMallocHost(&got, n * kMaxCount * sizeof(int32_t)));
  CHILD_CUDA(cudaMallocHost(&goOnHost, sizeof(int32_t)));
  state->step = "start barrier";
  barrier->arriveAndWait();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (uint64_t it = 0;; it++) {
    state->iteration = it;
    state->op = -1;
    state->step = "stop vote (AllReduce of a flag)";
    *goOnHost = std::chrono::steady_clock::now() < deadline ? 1 : 0;
    CHILD_CUDA(cudaMemcpyAsync(flag, goOnHost, sizeof(int32_t), cudaMemcpyHostToDevice, stream));
    CHILD_NCCL(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMin, comm, stream));
    CHILD_CUDA(cudaMemcpyAsync(goOnHost, flag, sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
    state->step = "cudaStreamSynchronize after the stop vote";
    CHILD_CUDA(cudaStreamSynchronize(stream));
    if (*goOnHost == 0) break;

    const uint64_t seed = mix(static_cast<uint64_t>(commIndex) << 48 ^ it);
    const Op op = static_cast<Op>(seed % kNumOps);
    const size_t count = 1 + mix(seed) % kMaxCount;
    for (size_t i = 0; i < count; i++) host[i] = value(seed, rank, i);
    CHILD_CUDA(cudaMemcpyAsync(in, host, count * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
    CHILD_CUDA(cudaMemsetAsync(out, 0xAB, n * count * sizeof(int32_t), stream));
    const int root = static_cast<int>((seed >> 32) % static_cast<uint64_t>(n));
    state->op = op;
    state->count = count;
    state->step = "enqueueing the operation";
    switch (op) {
      case kAllReduce:
        CHILD_NCCL(ncclAllReduce(in, out, count, ncclInt32, ncclSum, comm, stream));
        break;
      case kAllGather:
        CHILD_NCCL(ncclAllGather(in, out, count, ncclInt32, comm, stream));
        break;
      case kBroadcast:
        CHILD_NCCL(ncclBroadcast(in, out, count, ncclInt32, root, comm, stream));
        break;
      default:
        CHILD_NCCL(ncclGroupStart());
        CHILD_NCCL(ncclSend(in, count, ncclInt32, (rank + 1) % n, comm, stream));
        CHILD_NCCL(ncclRecv(out, count, ncclInt32, (rank + n - 1) % n, comm, stream));
        CHILD_NCCL(ncclGroupEnd());
        break;
    }
    const size_t outCount = op == kAllGather ? n * count : count;
    CHILD_CUDA(cudaMemcpyAsync(got, out, outCount * sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
    state->step = "cudaStreamSynchronize after the operation";
    CHILD_CUDA(cudaStreamSynchronize(stream));
    state->step = "checking";
    for (size_t i = 0; i < outCount; i++) {
      int32_t want = 0;
      if (op == kAllReduce) {
        for (int r = 0; r < n; r++) want += value(seed, r, i);
      } else if (op == kAllGather) {
        want = value(seed, static_cast<int>(i / count), i % count);
      } else if (op == kBroadcast) {
        want = value(seed, root, i);
      } else {
        want = value(seed, (rank + n - 1) % n, i);
      }
      if (got[i] != want) {
        std::fprintf(stderr, "comm %d rank %d op %d count %zu iteration %llu element %zu: expected %d got %d\n",
                     commIndex, rank, static_cast<int>(op), count, static_cast<unsigned long long>(it), i, want,
                     got[i]);
        return 1;
      }
    }
    ops->fetch_add(1);
  }
  state->step = "end barrier";
  barrier->arriveAndWait();
  state->step = "clean-up";
  CHILD_CUDA(cudaFree(in));
  CHILD_CUDA(cudaFree(out));
  CHILD_CUDA(cudaFree(flag));
  CHILD_CUDA(cudaFreeHost(host));
  CHILD_CUDA(cudaFreeHost(got));
  CHILD_CUDA(cudaFreeHost(goOnHost));
  CHILD_NCCL(ncclCommDestroy(comm));
  return 0;
}

TEST(ThreadSafety, EightThreadsEachDrivingItsOwnCommunicator) {
  const int gpus = gputest::gpuCount();
  const int n = gpus >= 4 ? 4 : gpus;
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  const int comms = kThreads / n;
  const int seconds = testSeconds();
  EXPECT_EQ(0, gputest::runInChild([=] {
              alarm(static_cast<unsigned>(seconds) + 120);
              std::vector<ncclUniqueId> ids(comms);
              for (ncclUniqueId& id : ids) CHILD_NCCL(ncclGetUniqueId(&id));
              std::atomic<long> ops{0};
              Barrier barrier;
              std::vector<int> rcs(kThreads, 1);
              std::vector<ThreadState> states(kThreads);
              std::atomic<int> running{kThreads};
              std::vector<std::thread> threads;
              for (int c = 0; c < comms; c++) {
                for (int r = 0; r < n; r++) {
                  threads.emplace_back([&, c, r] {
                    const int t = c * n + r;
                    rcs[t] = runRank(c, r, n, ids[c], seconds, &ops, &barrier, &states[t]);
                    running--;
                  });
                }
              }
              std::vector<pthread_t> handles;
              handles.reserve(threads.size());
              for (std::thread& t : threads) handles.push_back(t.native_handle());
              std::thread watch(gputest::watchProgress, std::cref(ops), std::cref(running), states.data(),
                                handles.data(), kThreads, kStallSeconds);
              for (std::thread& t : threads) t.join();
              watch.join();
              std::fprintf(stderr, "%d threads, %d communicators of %d ranks, %d s: %ld operations checked\n", kThreads,
                           comms, n, seconds, ops.load());
              for (int rc : rcs) CHILD_EXPECT(rc == 0);
              CHILD_EXPECT(ops.load() > 0);
              return 0;
            }));
}

}  // namespace
