// Communicator lifecycle on real GPUs: InitAll, InitRank per process, init inside a group, the
// scalable (several roots) init, two ranks on one GPU rejected, handle checks, memory that stays
// flat over many init/destroy cycles, an abort from another thread while a kernel spins, a
// nonblocking communicator refusing calls while in progress, and ranks on two emulated hosts
// destroying at different times or idling.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "child_comm_test_util.h"
#include "gpu_test_util.h"

namespace {

using gputest::gpuCount;
using gputest::runInChild;
using gputest::runRanksInProcesses;

int checkQueries(ncclComm_t comm, int nranks, int rank, int dev) {
  int count = -1, user = -1, cuDev = -1;
  CHILD_NCCL(ncclCommCount(comm, &count));
  CHILD_NCCL(ncclCommUserRank(comm, &user));
  CHILD_NCCL(ncclCommCuDevice(comm, &cuDev));
  CHILD_EXPECT(count == nranks);
  CHILD_EXPECT(user == rank);
  CHILD_EXPECT(cuDev == dev);
  ncclResult_t async = ncclInternalError;
  CHILD_NCCL(ncclCommGetAsyncError(comm, &async));
  CHILD_EXPECT(async == ncclSuccess);
  return 0;
}

TEST(CommLifecycle, InitAllOneToAllGpus) {
  for (int n = 1; n <= gputest::allGpuRanks(); n++) {
    SCOPED_TRACE("ndev " + std::to_string(n));
    EXPECT_EQ(0, runInChild([n] {
                std::vector<ncclComm_t> comms(n, nullptr);
                CHILD_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
                for (int r = 0; r < n; r++) {
                  if (checkQueries(comms[r], n, r, r) != 0) return 1;
                }
                for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
                return 0;
              }));
  }
}

TEST(CommLifecycle, InitAllWithDevlistInReverseOrder) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, runInChild([n] {
              std::vector<int> devs(n);
              for (int i = 0; i < n; i++) devs[i] = n - 1 - i;
              std::vector<ncclComm_t> comms(n, nullptr);
              CHILD_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
              for (int r = 0; r < n; r++) {
                if (checkQueries(comms[r], n, r, devs[r]) != 0) return 1;
              }
              for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
              return 0;
            }));
}

TEST(CommLifecycle, InitRankOneProcessPerGpu) {
  for (int n = 1; n <= gputest::allGpuRanks(); n++) {
    SCOPED_TRACE("nranks " + std::to_string(n));
    EXPECT_EQ(0, runRanksInProcesses(n, [n](int rank, const ncclUniqueId& id) {
                CHILD_CUDA(cudaSetDevice(rank));
                ncclComm_t comm = nullptr;
                CHILD_NCCL(ncclCommInitRank(&comm, n, id, rank));
                if (checkQueries(comm, n, rank, rank) != 0) return 1;
                CHILD_NCCL(ncclCommFinalize(comm));
                CHILD_NCCL(ncclCommDestroy(comm));
                return 0;
              }));
  }
}

TEST(CommLifecycle, InitRankInsideGroupFromOneThread) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, runInChild([n] {
              ncclUniqueId id;
              CHILD_NCCL(ncclGetUniqueId(&id));
              std::vector<ncclComm_t> comms(n, nullptr);
              CHILD_NCCL(ncclGroupStart());
              CHILD_NCCL(ncclGroupStart());  // groups nest; only the outermost End runs the rendezvous
              for (int r = 0; r < n; r++) {
                CHILD_CUDA(cudaSetDevice(r));
                CHILD_NCCL(ncclCommInitRank(&comms[r], n, id, r));
              }
              CHILD_NCCL(ncclGroupEnd());
              CHILD_NCCL(ncclGroupEnd());
              for (int r = 0; r < n; r++) {
                if (checkQueries(comms[r], n, r, r) != 0) return 1;
              }
              for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
              return 0;
            }));
}

TEST(CommLifecycle, ScalableInitWithTwoRoots) {
  const int n = gputest::allGpuRanks();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, runInChild([n] {
              ncclUniqueId ids[2];
              CHILD_NCCL(ncclGetUniqueId(&ids[0]));
              CHILD_NCCL(ncclGetUniqueId(&ids[1]));
              std::vector<ncclComm_t> comms(n, nullptr);
              CHILD_NCCL(ncclGroupStart());
              for (int r = 0; r < n; r++) {
                CHILD_CUDA(cudaSetDevice(r));
                CHILD_NCCL(ncclCommInitRankScalable(&comms[r], n, r, 2, ids, nullptr));
              }
              CHILD_NCCL(ncclGroupEnd());
              for (int r = 0; r < n; r++) {
                if (checkQueries(comms[r], n, r, r) != 0) return 1;
              }
              for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
              return 0;
            }));
}

// Two ranks on one GPU cannot work; both must be told, naming the ranks.
TEST(CommLifecycle, TwoRanksOnOneGpuAreRejected) {
  EXPECT_EQ(0, runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              CHILD_CUDA(cudaSetDevice(0));
              ncclComm_t comm = nullptr;
              ncclResult_t r = ncclCommInitRank(&comm, 2, id, rank);
              CHILD_EXPECT(r == ncclInvalidUsage);
              CHILD_EXPECT(comm == nullptr);
              std::string warn = ncclGetLastError(nullptr);
              CHILD_EXPECT(warn.find("ranks 0 and 1") != std::string::npos);
              return 0;
            }));
}

TEST(CommLifecycle, HandleChecks) {
  EXPECT_EQ(0, runInChild([] {
              CHILD_CUDA(cudaSetDevice(0));
              ncclUniqueId id;
              CHILD_NCCL(ncclGetUniqueId(&id));
              ncclComm_t comm = nullptr;
              CHILD_NCCL(ncclCommInitRank(&comm, 1, id, 0));
              int count = 0;
              CHILD_EXPECT(ncclCommCount(nullptr, &count) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommCount(comm, nullptr) == ncclInvalidArgument);
              int fake[64] = {};
              CHILD_EXPECT(ncclCommCount(reinterpret_cast<ncclComm_t>(fake), &count) == ncclInvalidArgument);
              CHILD_EXPECT(std::string(ncclGetLastError(nullptr)).find("not a live communicator") != std::string::npos);
              // Finalize closes the communicator to new work; a second finalize is a usage error.
              CHILD_NCCL(ncclCommFinalize(comm));
              CHILD_EXPECT(ncclCommFinalize(comm) == ncclInvalidUsage);
              CHILD_NCCL(ncclCommDestroy(comm));
              // A destroyed communicator is recognized, not dereferenced.
              CHILD_EXPECT(ncclCommCount(comm, &count) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommDestroy(comm) == ncclInvalidArgument);
              return 0;
            }));
}

TEST(CommLifecycle, ConfigLayoutsAndBadConfig) {
  EXPECT_EQ(0, runInChild([] {
              CHILD_CUDA(cudaSetDevice(0));
              // The 48-byte layout of a program built against NCCL 2.25.
              struct Config225 {
                size_t size;
                unsigned magic, version;
                int blocking, cgaClusterSize, minCTAs, maxCTAs;
                const char* netName;
                int splitShare, pad;
              } old = {sizeof(Config225), 0xcafebeef, 22501, 1, NCCL_CONFIG_UNDEF_INT, 2, 8, nullptr, 0, 0x7777};
              static_assert(sizeof(Config225) == 48, "2.25 layout");
              ncclUniqueId id;
              CHILD_NCCL(ncclGetUniqueId(&id));
              ncclComm_t comm = nullptr;
              CHILD_NCCL(ncclCommInitRankConfig(&comm, 1, id, 0, reinterpret_cast<ncclConfig_t*>(&old)));
              CHILD_NCCL(ncclCommDestroy(comm));

              ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
              config.minCTAs = 16;
              config.maxCTAs = 4;
              CHILD_NCCL(ncclGetUniqueId(&id));
              CHILD_EXPECT(ncclCommInitRankConfig(&comm, 1, id, 0, &config) == ncclInvalidArgument);
              CHILD_EXPECT(std::string(ncclGetLastError(nullptr)).find("minCTAs") != std::string::npos);
              return 0;
            }));
}

// 200 init/destroy cycles of a communicator over every GPU (50 in the quick tier), after 20 to warm
// up: device and host memory stay flat.
TEST(CommLifecycle, TwoHundredCyclesKeepMemoryFlat) {
  const int n = gputest::allGpuRanks();
  const int measured = gputest::quickTier() ? 50 : 200;
  EXPECT_EQ(0, runInChild([n, measured] {
              std::vector<ncclComm_t> comms(n);
              std::vector<size_t> freeBefore(n);
              size_t rssBefore = 0;
              for (int cycle = 0; cycle < 20 + measured; cycle++) {
                if (cycle == 20) {  // after warm-up: allocator pools and lazy loading have settled
                  for (int d = 0; d < n; d++) {
                    size_t total;
                    CHILD_CUDA(cudaSetDevice(d));
                    CHILD_CUDA(cudaMemGetInfo(&freeBefore[d], &total));
                  }
                  rssBefore = gputest::residentBytes();
                }
                CHILD_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
                for (ncclComm_t c : comms) CHILD_NCCL(ncclCommDestroy(c));
              }
              for (int d = 0; d < n; d++) {
                size_t freeAfter, total;
                CHILD_CUDA(cudaSetDevice(d));
                CHILD_CUDA(cudaMemGetInfo(&freeAfter, &total));
                long long lost = static_cast<long long>(freeBefore[d]) - static_cast<long long>(freeAfter);
                std::printf("device %d: %lld bytes of device memory lost over %d cycles\n", d, lost, measured);
                CHILD_EXPECT(lost <= 2 << 20);
              }
              long long rssGrowth =
                  static_cast<long long>(gputest::residentBytes()) - static_cast<long long>(rssBefore);
              std::printf("host resident memory grew by %lld bytes over %d cycles\n", rssGrowth, measured);
              CHILD_EXPECT(rssGrowth <= 4 << 20);
              return 0;
            }));
}

// Repeated jobs of one process per GPU, each with a fresh unique id: no state of an earlier job
// (ports, root threads) gets in the way of the next.
TEST(CommLifecycle, RepeatedJobsOneProcessPerGpu) {
  const int n = gputest::allGpuRanks();
  for (int cycle = 0; cycle < 5; cycle++) {
    ASSERT_EQ(0, runRanksInProcesses(n,
                                     [n](int rank, const ncclUniqueId& id) {
                                       CHILD_CUDA(cudaSetDevice(rank));
                                       ncclComm_t comm = nullptr;
                                       CHILD_NCCL(ncclCommInitRank(&comm, n, id, rank));
                                       CHILD_NCCL(ncclCommDestroy(comm));
                                       return 0;
                                     }))
        << "cycle " << cycle;
  }
}

// Rank 1 never joins the second AllReduce, so rank 0's kernel spins; another thread of rank 0 aborts the
// communicator. The abort returns within 100 ms (NVIDIA's NCCL takes 0.5-0.8 s on 4 H200), the
// kernel leaves, and the process makes and uses a new communicator afterwards. acrossHosts: each
// rank on an emulated host of its own (they may share one GPU), the kernel waiting on the network.
int abortWhileAKernelSpins(bool acrossHosts) {
  return runRanksInProcesses(2, [acrossHosts](int rank, const ncclUniqueId& id) {
    if (acrossHosts) gputest::enterEmulatedHost(rank);
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(rank)));
    ncclComm_t comm = nullptr;
    CHILD_NCCL(ncclCommInitRank(&comm, 2, id, rank));
    constexpr size_t kCount = 1 << 22;
    float* buf = nullptr;
    cudaStream_t stream = nullptr;
    CHILD_CUDA(cudaMalloc(&buf, kCount * sizeof(float)));
    CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    // Both ranks run it once, so the connections exist (they are made at first use, with both
    // ranks present) and the second call launches at once.
    CHILD_NCCL(ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, comm, stream));
    CHILD_CUDA(cudaStreamSynchronize(stream));
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(3));  // alive, but never joins
      CHILD_NCCL(ncclCommDestroy(comm));
      CHILD_CUDA(cudaStreamDestroy(stream));
      CHILD_CUDA(cudaFree(buf));
      return 0;
    }
    CHILD_NCCL(ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, comm, stream));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHILD_EXPECT(cudaStreamQuery(stream) == cudaErrorNotReady);  // spinning for rank 1
    double abortMs = -1;
    ncclResult_t abortResult = ncclInternalError;
    std::thread aborter([&] {
      const auto start = std::chrono::steady_clock::now();
      abortResult = ncclCommAbort(comm);
      abortMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    });
    aborter.join();
    std::fprintf(stderr, "ncclCommAbort while a kernel spins%s: %.2f ms\n", acrossHosts ? " (across hosts)" : "",
                 abortMs);
    CHILD_EXPECT(abortResult == ncclSuccess);
    CHILD_EXPECT(abortMs < 100);
    CHILD_CUDA(cudaStreamSynchronize(stream));  // the kernel has left
    // A fresh one-rank communicator works.
    ncclUniqueId fresh;
    CHILD_NCCL(ncclGetUniqueId(&fresh));
    ncclComm_t alone = nullptr;
    CHILD_NCCL(ncclCommInitRank(&alone, 1, fresh, 0));
    CHILD_NCCL(ncclAllReduce(buf, buf, kCount, ncclFloat32, ncclSum, alone, stream));
    CHILD_CUDA(cudaStreamSynchronize(stream));
    CHILD_NCCL(ncclCommDestroy(alone));
    CHILD_CUDA(cudaStreamDestroy(stream));
    CHILD_CUDA(cudaFree(buf));
    return 0;
  });
}

TEST(CommLifecycle, AbortFromAnotherThreadWhileAKernelSpins) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, abortWhileAKernelSpins(false));
}

TEST(CommLifecycle, AbortFromAnotherThreadWhileAKernelSpinsAcrossHosts) {
  if (!gputest::emulatedHostsFit(2, 1)) GTEST_SKIP() << "needs a GPU";
  EXPECT_EQ(0, abortWhileAKernelSpins(true));
}

// A nonblocking communicator used while in progress refuses the call with ncclInvalidArgument (as
// NCCL does) and queues nothing: rank 1 arrives 500 ms late, first at the creation, then at the
// first AllReduce (which connects in the background), so rank 0's calls meanwhile surely find it in
// progress. Had a refused AllReduce been queued, rank 0 would run one more than rank 1 and the
// checked results (and the watchdog) would say so.
TEST(CommLifecycle, NonblockingCommunicatorInProgressRefusesCalls) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              alarm(120);
              CHILD_CUDA(cudaSetDevice(rank));
              constexpr size_t kCount = 1 << 16;
              int32_t* buf = nullptr;
              cudaStream_t stream = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, kCount * sizeof(int32_t)));
              CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
              std::vector<int32_t> host(kCount);
              for (size_t i = 0; i < kCount; i++) host[i] = static_cast<int32_t>(i * 7 + rank * 1000003);
              CHILD_CUDA(gputest::uploadSync(buf, host.data(), kCount * sizeof(int32_t)));
              ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
              config.blocking = 0;
              const auto late = std::chrono::milliseconds(500);
              if (rank == 1) std::this_thread::sleep_for(late);
              ncclComm_t comm = nullptr;
              const ncclResult_t init = ncclCommInitRankConfig(&comm, 2, id, rank, &config);
              CHILD_EXPECT(init == ncclInProgress || init == ncclSuccess);
              if (rank == 0) {
                CHILD_EXPECT(init == ncclInProgress);  // rank 1 is not there yet
                CHILD_EXPECT(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, stream) == ncclInvalidArgument);
                CHILD_EXPECT(ncclSend(buf, 1, ncclInt32, 1, comm, stream) == ncclInvalidArgument);
              }
              CHILD_EXPECT(childtest::waitReady(comm) == ncclSuccess);
              if (rank == 1) std::this_thread::sleep_for(late);
              CHILD_NCCL(ncclGroupStart());
              CHILD_NCCL(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, stream));
              const ncclResult_t launch = ncclGroupEnd();
              if (rank == 0) {
                CHILD_EXPECT(launch == ncclInProgress);  // connecting, with rank 1 still asleep
                CHILD_EXPECT(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, stream) == ncclInvalidArgument);
                CHILD_EXPECT(std::string(ncclGetLastError(comm)).find("in progress") != std::string::npos);
              }
              CHILD_EXPECT(childtest::waitReady(comm) == ncclSuccess);
              CHILD_CUDA(cudaStreamSynchronize(stream));
              std::vector<int32_t> out(kCount);
              CHILD_CUDA(cudaMemcpy(out.data(), buf, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
              for (size_t i = 0; i < kCount; i++) {
                const int32_t want = static_cast<int32_t>(i * 14 + 1000003);
                if (out[i] != want) {
                  std::fprintf(stderr, "rank %d: [%zu] = %d, expected %d (one AllReduce)\n", rank, i, out[i], want);
                  return 1;
                }
              }
              CHILD_NCCL(ncclCommDestroy(comm));
              CHILD_CUDA(cudaStreamDestroy(stream));
              CHILD_CUDA(cudaFree(buf));
              return 0;
            }));
}

// Rank `rank` of `nranks`, each on its own emulated host (the data crosses the socket network over
// loopback; ranks may share a GPU): its communicator in *comm.
int initOnItsOwnHost(int nranks, int rank, const ncclUniqueId& id, ncclComm_t* comm) {
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  gputest::enterEmulatedHost(rank);
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(rank)));
  CHILD_NCCL(ncclCommInitRank(comm, nranks, id, rank));
  return 0;
}

// Two ranks on two emulated hosts (the data crosses the socket network; they may share a GPU).
// Rank 0 sends 64 MiB and destroys its communicator at once: its kernel finishes when the last
// steps are in its host FIFO, before the network has taken them, so destroy must send them (and
// its farewell) before it closes. Rank 1 receives every byte, then finds no asynchronous error
// while rank 0 is gone (a rank that destroys later must not take the first one's closed
// connections for a failed peer: PyTorch's watchdog tears the process down on one), and destroys
// cleanly.
TEST(CommLifecycle, AcrossHostsARankThatDestroysFirstLosesNoDataAndLeavesNoError) {
  if (!gputest::emulatedHostsFit(2, 1)) GTEST_SKIP() << "2 ranks on hosts of 1 do not fit this machine";
  EXPECT_EQ(0, runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              ncclComm_t comm = nullptr;
              if (initOnItsOwnHost(2, rank, id, &comm) != 0) return 1;
              constexpr size_t kCount = size_t{16} << 20;  // int32: 64 MiB
              std::vector<uint32_t> host(kCount);
              for (size_t i = 0; i < kCount; i++) host[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0x5eed;
              uint32_t* buf = nullptr;
              cudaStream_t stream = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, kCount * sizeof(uint32_t)));
              CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
              if (rank == 0) {
                CHILD_CUDA(gputest::uploadSync(buf, host.data(), kCount * sizeof(uint32_t)));
                CHILD_NCCL(ncclSend(buf, kCount, ncclUint32, 1, comm, stream));
                CHILD_NCCL(ncclCommDestroy(comm));
                CHILD_CUDA(cudaStreamSynchronize(stream));
              } else {
                CHILD_CUDA(cudaMemset(buf, 0xff, kCount * sizeof(uint32_t)));
                CHILD_NCCL(ncclRecv(buf, kCount, ncclUint32, 0, comm, stream));
                const auto start = std::chrono::steady_clock::now();
                while (cudaStreamQuery(stream) == cudaErrorNotReady &&
                       std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                if (cudaStreamQuery(stream) != cudaSuccess) {
                  std::fprintf(stderr, "rank 1: the receive did not finish within 20 s\n");
                  (void)ncclCommAbort(comm);
                  return 1;
                }
                std::vector<uint32_t> got(kCount);
                CHILD_CUDA(cudaMemcpy(got.data(), buf, kCount * sizeof(uint32_t), cudaMemcpyDeviceToHost));
                size_t wrong = 0;
                for (size_t i = 0; i < kCount; i++) wrong += got[i] != host[i] ? 1 : 0;
                CHILD_EXPECT(wrong == 0);
                for (int i = 0; i < 75; i++) {  // 1.5 s: rank 0 has destroyed its communicator meanwhile
                  ncclResult_t async = ncclInternalError;
                  CHILD_NCCL(ncclCommGetAsyncError(comm, &async));
                  CHILD_EXPECT(async == ncclSuccess);
                  std::this_thread::sleep_for(std::chrono::milliseconds(20));
                }
                CHILD_NCCL(ncclCommDestroy(comm));
              }
              CHILD_CUDA(cudaStreamDestroy(stream));
              CHILD_CUDA(cudaFree(buf));
              return 0;
            }));
}

// AllReduce of `count` int32 over `comm`: each rank's values differ, the sum is checked exactly.
int allReduceChecked(ncclComm_t comm, int nranks, int rank, int32_t* buf, size_t count, cudaStream_t stream) {
  std::vector<int32_t> host(count);
  for (size_t i = 0; i < count; i++) host[i] = static_cast<int32_t>((i * 7 + static_cast<size_t>(rank) * 13) % 1000);
  CHILD_CUDA(gputest::uploadSync(buf, host.data(), count * sizeof(int32_t)));
  CHILD_NCCL(ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, stream));
  CHILD_CUDA(cudaStreamSynchronize(stream));
  CHILD_CUDA(cudaMemcpy(host.data(), buf, count * sizeof(int32_t), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++) {
    int64_t expected = 0;
    for (int r = 0; r < nranks; r++) expected += static_cast<int64_t>((i * 7 + static_cast<size_t>(r) * 13) % 1000);
    wrong += host[i] != expected ? 1 : 0;
  }
  CHILD_EXPECT(wrong == 0);
  return 0;
}

// Two ranks on two emulated hosts, idle after an AllReduce: once the peer watch (every second) has
// seen their launches end, each process's proxy sleeps up to 100 ms at a time instead of 1 ms
// (proxy/proxy.h, "Idle"). Counted as the voluntary context switches of the whole process in 2 s,
// 3 s after the AllReduce: a proxy that stopped at 1 ms would make about 2,000 alone. Another
// AllReduce afterwards is still correct (its launch wakes the proxy).
TEST(CommLifecycle, AcrossHostsAnIdleCommunicatorWakesRarely) {
  if (!gputest::emulatedHostsFit(2, 1)) GTEST_SKIP() << "2 ranks on hosts of 1 do not fit this machine";
  EXPECT_EQ(0, runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              ncclComm_t comm = nullptr;
              if (initOnItsOwnHost(2, rank, id, &comm) != 0) return 1;
              constexpr size_t kCount = size_t{16} << 20;
              int32_t* buf = nullptr;
              cudaStream_t stream = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, kCount * sizeof(int32_t)));
              CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
              if (allReduceChecked(comm, 2, rank, buf, kCount, stream) != 0) return 1;
              std::this_thread::sleep_for(std::chrono::seconds(3));
              rusage before{};
              getrusage(RUSAGE_SELF, &before);
              std::this_thread::sleep_for(std::chrono::seconds(2));
              rusage after{};
              getrusage(RUSAGE_SELF, &after);
              const long wakes = after.ru_nvcsw - before.ru_nvcsw;
              std::printf("rank %d: %ld voluntary context switches in 2 s of idle time\n", rank, wakes);
              CHILD_EXPECT(wakes < 500);
              if (allReduceChecked(comm, 2, rank, buf, kCount, stream) != 0) return 1;
              CHILD_NCCL(ncclCommDestroy(comm));
              CHILD_CUDA(cudaStreamDestroy(stream));
              CHILD_CUDA(cudaFree(buf));
              return 0;
            }));
}

}  // namespace
