// ncclCommSuspend / ncclCommResume / ncclCommMemStats. A communicator that ran every collective,
// send/receive and an in-place AlltoAll (staging memory) is suspended: its device memory (the
// difference between the GPU's free memory with it suspended and with it destroyed) is at most
// 2 MiB; MemStats reports what it holds; operations are refused. After the resume, a CUDA graph
// captured before the suspension replays with exact results (every address is where it was), and
// every collective is exact again. Ranks as processes and as threads. Also: the misuse (a second
// suspend, resume without suspend, unknown flags, inside a group, operations while suspended),
// destroying a suspended communicator, and NCCL_CUMEM_ENABLE=0 (cudaMalloc memory: refused on every
// rank, nothing suspended).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "every_collective.h"
#include "gpu_test_util.h"

namespace {

using gputest::runInChild;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kSuspendedBudget = 2 * kMiB;

size_t freeDeviceBytes() {
  size_t freeBytes = 0, total = 0;
  if (cudaDeviceSynchronize() != cudaSuccess || cudaMemGetInfo(&freeBytes, &total) != cudaSuccess) return 0;
  return freeBytes;
}

struct Stats {
  uint64_t suspend = 0, suspended = 0, persist = 0, total = 0;
};

int memStats(ncclComm_t comm, Stats* s) {
  CHILD_NCCL(ncclCommMemStats(comm, ncclStatGpuMemSuspend, &s->suspend));
  CHILD_NCCL(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &s->suspended));
  CHILD_NCCL(ncclCommMemStats(comm, ncclStatGpuMemPersist, &s->persist));
  CHILD_NCCL(ncclCommMemStats(comm, ncclStatGpuMemTotal, &s->total));
  return 0;
}

uint32_t inputOf(int round, int rank, size_t i) {
  uint32_t x = static_cast<uint32_t>(round * 92821 + rank * 6151 + static_cast<int>(i) * 13 + 5);
  x ^= x >> 11;
  x *= 0x2c1b3c6du;
  return x >> 9;
}

// An AllReduce of 4 MiB (several channels and steps) and an in-place AlltoAll, captured in one
// graph: replayed before and after the suspension with new inputs each time.
struct CapturedWork {
  size_t count = 0;
  uint32_t* in = nullptr;
  uint32_t* out = nullptr;
  uint32_t* a2a = nullptr;
  cudaGraphExec_t exec = nullptr;

  int capture(ncclComm_t comm, int n, cudaStream_t s) {
    count = 4 * kMiB / sizeof(uint32_t);
    CHILD_CUDA(cudaMalloc(&in, count * sizeof(uint32_t)));
    CHILD_CUDA(cudaMalloc(&out, count * sizeof(uint32_t)));
    CHILD_CUDA(cudaMalloc(&a2a, 4096 * n * sizeof(uint32_t)));
    cudaGraph_t graph = nullptr;
    // Thread-local: the other ranks' threads allocate while this one captures.
    CHILD_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHILD_NCCL(ncclAllReduce(in, out, count, ncclUint32, ncclSum, comm, s));
    CHILD_NCCL(ncclAlltoAll(a2a, a2a, 4096, ncclUint32, comm, s));
    CHILD_CUDA(cudaStreamEndCapture(s, &graph));
    CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHILD_CUDA(cudaGraphDestroy(graph));
    return 0;
  }

  int replayAndCheck(int round, int n, int rank, cudaStream_t s) {
    std::vector<uint32_t> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = inputOf(round, rank, i);
    CHILD_CUDA(gputest::uploadSync(in, host.data(), count * sizeof(uint32_t)));
    CHILD_CUDA(gputest::poisonSync(out, 0x5a, count * sizeof(uint32_t)));
    const size_t block = 4096;
    std::vector<uint32_t> a(block * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = inputOf(round + 1000, rank, i);
    CHILD_CUDA(gputest::uploadSync(a2a, a.data(), a.size() * sizeof(uint32_t)));
    CHILD_CUDA(cudaGraphLaunch(exec, s));
    CHILD_CUDA(cudaStreamSynchronize(s));
    CHILD_CUDA(cudaMemcpy(host.data(), out, count * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      uint32_t sum = 0;
      for (int r = 0; r < n; ++r) sum += inputOf(round, r, i);
      CHILD_EXPECT(host[i] == sum);
    }
    CHILD_CUDA(cudaMemcpy(a.data(), a2a, a.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < block; ++i) CHILD_EXPECT(a[r * block + i] == inputOf(round + 1000, r, rank * block + i));
    }
    return 0;
  }

  void release() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    (void)cudaFree(in);
    (void)cudaFree(out);
    (void)cudaFree(a2a);
  }
};

// Every call a suspended communicator refuses (collective ones refused locally, before any message).
int checkRefusals(ncclComm_t comm, cudaStream_t s, uint32_t* buf) {
  CHILD_EXPECT(ncclAllReduce(buf, buf, 16, ncclUint32, ncclSum, comm, s) == ncclInvalidUsage);
  CHILD_EXPECT(ncclSend(buf, 16, ncclUint32, 0, comm, s) == ncclInvalidUsage);
  CHILD_EXPECT(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclInvalidUsage);  // already suspended
  CHILD_EXPECT(ncclCommFinalize(comm) == ncclInvalidUsage);
  ncclComm_t child = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.splitShare = 1;  // would reuse connections whose memory is gone
  CHILD_EXPECT(ncclCommSplit(comm, 0, 0, &child, &config) == ncclInvalidUsage && child == nullptr);
  int count = 0;
  CHILD_NCCL(ncclCommCount(comm, &count));  // queries still answer
  return 0;
}

// One rank: the whole story, with the memory measured at each point (printed for the record) where
// the rank has its GPU to itself (`measure`).
int suspendRank(ncclComm_t comm, int n, int rank, cudaStream_t s, bool measure) {
  CHILD_EXPECT(ncclCommResume(comm) == ncclInvalidUsage);           // not suspended
  CHILD_EXPECT(ncclCommSuspend(comm, 0x2) == ncclInvalidArgument);  // unknown flag
  CHILD_EXPECT(ncclCommMemStats(comm, ncclStatGpuMemTotal, nullptr) == ncclInvalidArgument);
  CHILD_EXPECT(ncclCommMemStats(comm, static_cast<ncclCommMemStat_t>(9), nullptr) == ncclInvalidArgument);
  if (gputest::runEveryCollective(comm, n, rank, 1) != 0) return 1;
  CapturedWork work;
  if (work.capture(comm, n, s) != 0 || work.replayAndCheck(1, n, rank, s) != 0) return 1;
  Stats active;
  if (memStats(comm, &active) != 0) return 1;
  CHILD_EXPECT(active.suspended == 0 && active.total == active.suspend + active.persist);
  if (n > 1) CHILD_EXPECT(active.suspend > 0);
  CHILD_EXPECT(active.persist <= kSuspendedBudget);
  const size_t freeActive = freeDeviceBytes();

  CHILD_NCCL(ncclGroupStart());
  CHILD_EXPECT(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclInvalidUsage);  // inside a group
  CHILD_NCCL(ncclGroupEnd());
  CHILD_NCCL(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
  const size_t freeSuspended = freeDeviceBytes();
  Stats during;
  if (memStats(comm, &during) != 0) return 1;
  CHILD_EXPECT(during.suspended == 1 && during.total == active.total);
  if (checkRefusals(comm, s, work.in) != 0) return 1;
  CHILD_NCCL(ncclCommResume(comm));
  const size_t freeResumed = freeDeviceBytes();
  Stats after;
  if (memStats(comm, &after) != 0) return 1;
  CHILD_EXPECT(after.suspended == 0 && after.total == active.total);
  if (measure) {
    CHILD_EXPECT(freeSuspended >= freeActive + active.suspend - kMiB);  // the memory really went
    CHILD_EXPECT(freeResumed + kMiB >= freeActive && freeResumed <= freeActive + kMiB);
  }

  if (work.replayAndCheck(2, n, rank, s) != 0) return 1;  // the graph captured before
  if (gputest::runEveryCollective(comm, n, rank, 2) != 0) return 1;
  if (work.replayAndCheck(3, n, rank, s) != 0) return 1;

  // Suspended again, then destroyed: the footprint while suspended is what destroying frees.
  CHILD_NCCL(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
  const size_t freeSuspendedAgain = freeDeviceBytes();
  CHILD_NCCL(ncclCommDestroy(comm));
  const size_t freeGone = freeDeviceBytes();
  work.release();
  const double footprint = (static_cast<double>(freeGone) - static_cast<double>(freeSuspendedAgain)) / kMiB;
  const double activeFootprint = (static_cast<double>(freeGone) - static_cast<double>(freeActive)) / kMiB;
  std::printf("rank %d: active %.1f MiB (MemStats total %.1f, suspendable %.1f, persistent %.3f), suspended %.2f MiB\n",
              rank, activeFootprint, active.total / double(kMiB), active.suspend / double(kMiB),
              active.persist / double(kMiB), footprint);
  if (measure) CHILD_EXPECT(freeGone <= freeSuspendedAgain + kSuspendedBudget);
  return 0;
}

// The rank bodies own their communicator (it is destroyed while suspended inside). perHost > 0:
// ranks on emulated hosts of that many ranks (processes only), whose ranks may share a GPU.
int rankMain(int n, int rank, const ncclUniqueId& id, int perHost = 0) {
  if (perHost > 0) gputest::enterEmulatedHost(rank / perHost);
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(rank)));
  ncclComm_t comm = nullptr;
  CHILD_NCCL(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  CHILD_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const bool gpuOfItsOwn = n <= gputest::gpuCount();
  const int rc = suspendRank(comm, n, rank, s, gpuOfItsOwn);
  CHILD_CUDA(cudaStreamDestroy(s));
  return rc;
}

void runSuspend(int n, bool processes) {
  if (gputest::gpuCount() < n) GTEST_SKIP() << "needs " << n << " GPUs";
  auto body = [n](int rank, const ncclUniqueId& id) { return rankMain(n, rank, id); };
  if (processes) {
    EXPECT_EQ(0, gputest::runRanksInProcesses(n, body));
  } else {
    EXPECT_EQ(0, runInChild([&] { return gputest::runRanksInThreads(n, body); }));
  }
}

TEST(Suspend, OneRank) { runSuspend(1, true); }
TEST(Suspend, TwoProcesses) { runSuspend(2, true); }
TEST(Suspend, TwoThreads) { runSuspend(2, false); }
TEST(Suspend, AllGpusProcesses) { runSuspend(gputest::allGpuRanks() < 3 ? 3 : gputest::allGpuRanks(), true); }
TEST(Suspend, AllGpusThreads) { runSuspend(gputest::allGpuRanks() < 3 ? 3 : gputest::allGpuRanks(), false); }

// Across hosts the connections' FIFOs are host memory, which stays; the staging memory goes.
TEST(Suspend, AcrossEmulatedHosts) {
  const int n = gputest::gpuCount() < 2 ? 2 : 4;
  const std::vector<int> sizes = gputest::emulatedHostSizes(n);
  if (sizes.empty()) GTEST_SKIP() << n << " ranks on emulated hosts do not fit this machine";
  for (int perHost : sizes) {
    SCOPED_TRACE(gputest::emulatedHostsName(n, perHost));
    EXPECT_EQ(0, gputest::runRanksInProcesses(
                     n, [n, perHost](int rank, const ncclUniqueId& id) { return rankMain(n, rank, id, perHost); }));
  }
}

// Without cuMem the connections are cudaMalloc memory, whose addresses cannot survive: every rank
// refuses, and the communicator still works.
TEST(Suspend, RefusedWithoutCuMem) {
  if (gputest::gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              setenv("NCCL_CUMEM_ENABLE", "0", 1);
              CHILD_CUDA(cudaSetDevice(rank));
              ncclComm_t comm = nullptr;
              CHILD_NCCL(ncclCommInitRank(&comm, 2, id, rank));
              if (gputest::runEveryCollective(comm, 2, rank, 1) != 0) return 1;
              CHILD_EXPECT(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclInvalidUsage);
              uint64_t suspended = 1;
              CHILD_NCCL(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &suspended));
              CHILD_EXPECT(suspended == 0);
              if (gputest::runEveryCollective(comm, 2, rank, 2) != 0) return 1;
              CHILD_NCCL(ncclCommDestroy(comm));
              return 0;
            }));
}

}  // namespace
