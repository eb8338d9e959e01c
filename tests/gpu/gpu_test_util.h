// Helpers for GPU tests. Every test body runs in forked child processes, so that the gtest
// process itself never initializes CUDA (CUDA does not survive fork) and one crashing rank fails
// its test instead of the whole binary.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace gputest {

// Number of GPUs, asked in a child process.
int gpuCount();

// Test tiers (tests/README.md). BRAID_GPU_TIER=quick, the default of scripts/test.sh, touches every
// feature once in a few minutes; unset or "full" runs everything.
bool quickTier();
// The rank counts the suites instantiated for several of them use.
inline const std::vector<int>& rankCounts() {
  static const std::vector<int> counts = {2, 4, 8};
  return counts;
}
// In the quick tier such a suite runs one instance: the largest of `instances` up to 4 ranks that
// fits this machine's GPUs, else the smallest.
int quickTierRanks(const std::vector<int>& instances = rankCounts());
// Whether the quick tier leaves the instance of `nranks` out; *why then says so (for GTEST_SKIP).
bool leftOutOfQuickTier(int nranks, std::string* why, const std::vector<int>& instances = rankCounts());

// The ranks of tests that use every GPU: all of them, up to 8 (the largest machine they run on).
inline int allGpuRanks() { return gpuCount() < 8 ? gpuCount() : 8; }

// The GPU of `rank`: the rank modulo the GPUs this process sees, which is the rank itself wherever
// a test has a GPU per rank. Ranks on different emulated hosts (NCCL_HOSTID) may share a GPU, as
// NCCL allows (its duplicate-GPU rule is per host), so that tests across emulated hosts also run on
// machines with fewer GPUs than ranks. Call it in a rank's process (it asks CUDA).
int deviceOfRank(int rank);

// The most ranks of different emulated hosts that share one GPU: their kernels take turns on it
// (time slices), which is slow but correct.
constexpr int kMaxRanksPerGpu = 4;

// Whether nranks on emulated hosts of perHost ranks each run here with deviceOfRank: a host's
// ranks on distinct GPUs, at most kMaxRanksPerGpu ranks per GPU.
inline bool emulatedHostsFit(int nranks, int perHost) {
  const int gpus = gpuCount();
  return perHost >= 1 && nranks % perHost == 0 && perHost <= gpus && gpus % perHost == 0 &&
         nranks <= kMaxRanksPerGpu * gpus;
}

// The host sizes to test nranks across emulated hosts with: n / 2, n / 4, ..., 1 ranks per host,
// those that fit this machine (emulatedHostsFit). Empty: the test cannot run here.
std::vector<int> emulatedHostSizes(int nranks);

// The host sizes a test across emulated hosts loops over: emulatedHostSizes, or in the quick tier its
// largest (hosts of several GPUs: both NVLink and the network between them).
inline std::vector<int> tierHostSizes(int nranks) {
  std::vector<int> sizes = emulatedHostSizes(nranks);
  if (quickTier() && sizes.size() > 1) sizes.resize(1);
  return sizes;
}

// "2 hosts of 2 ranks", for traces.
inline std::string emulatedHostsName(int nranks, int perHost) {
  return std::to_string(nranks / perHost) + " hosts of " + std::to_string(perHost) + " ranks";
}

// Puts this process on emulated host `host` (NCCL_HOSTID), whose traffic with the others goes over
// the network: call it in a rank's process before its first communicator.
inline void enterEmulatedHost(int host) {
  setenv("NCCL_HOSTID", ("braid-test-host-" + std::to_string(host)).c_str(), 1);
}

// Runs body(rank) in `nranks` child processes; rank 0's unique id (made in the child of rank 0
// when makeId is true) is passed to all of them. Returns the number of ranks that failed (exit
// code != 0 or killed).
int runRanksInProcesses(int nranks, const std::function<int(int rank, const ncclUniqueId& id)>& body);

// Runs body(rank) on `nranks` threads of the calling process with one fresh unique id, and returns
// the largest of their results (1 for a rank whose id could not be made). Call it inside runInChild.
int runRanksInThreads(int nranks, const std::function<int(int rank, const ncclUniqueId& id)>& body);

// Runs body() in one child process; returns its exit code (or 128+signal).
int runInChild(const std::function<int()>& body);

// Resident host memory of this process in bytes.
size_t residentBytes();

// Fills `bytes` of device memory with `byte` and waits until it is done. A plain cudaMemset runs on
// the legacy default stream, which the tests' non-blocking streams do not wait for: a poison still
// in flight can land on top of a collective's output.
cudaError_t poisonSync(void* ptr, int byte, size_t bytes);

// Copies `bytes` of host memory to the device and waits until they have landed. A plain cudaMemcpy
// from pageable memory returns once the data is staged, with the last DMA possibly still in flight
// on the legacy default stream, which a non-blocking stream's kernel does not wait for: it can read
// the previous contents (seen: an AlltoAll's self block across emulated hosts, 2 H200).
cudaError_t uploadSync(void* dst, const void* src, size_t bytes);

}  // namespace gputest

// Checks inside a child process body: print and return a nonzero code on failure.
#define CHILD_EXPECT(cond)                                                                \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)
#define CHILD_NCCL(call)                                                                               \
  do {                                                                                                 \
    ncclResult_t r_ = (call);                                                                          \
    if (r_ != ncclSuccess) {                                                                           \
      std::fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
                   ncclGetLastError(nullptr));                                                         \
      return 1;                                                                                        \
    }                                                                                                  \
  } while (0)
#define CHILD_CUDA(call)                                                                            \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                     \
    }                                                                                               \
  } while (0)
