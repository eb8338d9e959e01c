// Kernels compiled against NVIDIA's own nccl.h and nccl_device.h of one NCCL release, run on Braid's
// library: the library writes the ncclDevComm layout of that release (it tells the release from the
// requirements the program passes) and NVIDIA's inline device code reads it. tests/gpu/CMakeLists.txt
// builds this file once per release whose headers it finds, with NVIDIA's include folder first and
// Braid's absent, as gpu_device_api_nvidia_<NCCL_VERSION_CODE>_test; it includes nothing of Braid's
// (gpu_test_util.h and gpu_test_main.cc, shared with the other GPU tests, use NCCL 2.28's API only
// and take the nccl.h the include path gives them: NVIDIA's here).
//
// Every GPU is one rank of one communicator (ncclCommInitAll), so the LSA team is the whole
// communicator. An LSA AllReduce by loads between two barriers runs twice (the second starts from the
// barrier epochs the first left), and a kernel reports the communicator fields it reads.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <nccl_device.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

#if !defined(BRAID_NVIDIA_CODE) || NCCL_VERSION_CODE != BRAID_NVIDIA_CODE
#error "NVIDIA's headers of the release named by BRAID_NVIDIA_CODE must come first on the include path"
#endif

namespace {

// sizeof(ncclDevComm) of each release, as docs/device-api.md records it: a header that is not the
// release's (or Braid's own, 248 bytes, under a 2.28.9 nccl.h) fails here.
constexpr size_t kDevCommBytes = NCCL_VERSION_CODE >= 23100   ? 248
                                 : NCCL_VERSION_CODE >= 23000 ? 240
                                 : NCCL_VERSION_CODE >= 22907 ? 224
                                                              : 200;
static_assert(sizeof(ncclDevComm) == kDevCommBytes, "ncclDevComm is not the size docs/device-api.md gives");

// Waits for a stream, at most `seconds`: a barrier that reads the wrong words never completes, and
// the test must fail rather than hang.
cudaError_t waitStream(cudaStream_t stream, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e != cudaErrorNotReady) return e;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "a kernel still runs after %d s: a barrier that never completes\n", seconds);
      return cudaErrorLaunchTimeout;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// ---- Kernels, written against NVIDIA's device API of this release ----

constexpr int kBlocks = 4;
constexpr int kThreads = 256;
using Elem = uint32_t;  // sums wrap exactly

// One-shot AllReduce: after a barrier every rank loads every peer's input through LSA and sums in
// rank order; the closing barrier keeps the inputs in place while a peer still reads them.
__global__ void lsaAllReduce(ncclWindow_t sendWin, size_t sendOffset, ncclWindow_t recvWin, size_t recvOffset,
                             size_t count, ncclDevComm devComm) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), devComm, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  Elem* out = static_cast<Elem*>(ncclGetLocalPointer(recvWin, recvOffset));
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    Elem sum = 0;
    for (int peer = 0; peer < devComm.lsaSize; peer++) {
      sum += static_cast<const Elem*>(ncclGetLsaPointer(sendWin, sendOffset, peer))[i];
    }
    out[i] = sum;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// The fields the kernel reads of the communicator it was given, and of its LSA team.
__global__ void readFields(ncclDevComm devComm, int* out) {
  ncclTeam lsa = ncclTeamLsa(devComm);
  out[0] = devComm.rank;
  out[1] = devComm.nRanks;
  out[2] = devComm.lsaSize;
  out[3] = devComm.lsaRank;
  out[4] = lsa.rank;
  out[5] = lsa.nRanks;
  out[6] = devComm.lsaBarrier.nBarriers;
}
constexpr int kFields = 7;

// ---- Host side ----

constexpr size_t kCount = (1 << 16) + 5;  // odd: blocks end mid-vector
constexpr size_t kPad = 32;               // the data starts this many elements into each window
constexpr int kKernelSeconds = 60;

// The device communicator with bytes after it that the library must leave alone: it writes this
// release's structure, nothing past it.
struct GuardedDevComm {
  ncclDevComm devComm;
  unsigned char tail[64];
};

struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  Elem* send = nullptr;  // kPad + kCount elements; the windows start at the allocations
  Elem* recv = nullptr;
  ncclWindow_t sendWin = nullptr, recvWin = nullptr;
  GuardedDevComm dev;
  bool devCommMade = false;
  int* fields = nullptr;
};

int openWindows(std::vector<Rank>& ranks) {
  for (size_t r = 0; r < ranks.size(); r++) {
    CHILD_CUDA(cudaSetDevice(int(r)));
    CHILD_CUDA(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
    CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&ranks[r].send), (kPad + kCount) * sizeof(Elem)));
    CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&ranks[r].recv), (kPad + kCount) * sizeof(Elem)));
    CHILD_CUDA(cudaMalloc(&ranks[r].fields, kFields * sizeof(int)));
  }
  CHILD_NCCL(ncclGroupStart());
  ncclResult_t result = ncclSuccess;
  for (size_t r = 0; r < ranks.size() && result == ncclSuccess; r++) {
    const size_t bytes = (kPad + kCount) * sizeof(Elem);
    result = ncclCommWindowRegister(ranks[r].comm, ranks[r].send, bytes, &ranks[r].sendWin, 0);
    if (result == ncclSuccess)
      result = ncclCommWindowRegister(ranks[r].comm, ranks[r].recv, bytes, &ranks[r].recvWin, 0);
  }
  CHILD_NCCL(result);
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// Requirements as a program of this release makes them: NCCL 2.28 has no initializer (and no header
// fields), so programs zero the structure; later releases' initializer writes size, magic and version.
ncclDevCommRequirements_t requirements() {
#if NCCL_VERSION_CODE >= 22900
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
  ncclDevCommRequirements_t reqs;
  std::memset(&reqs, 0, sizeof(reqs));
#endif
  reqs.lsaBarrierCount = kBlocks;
  return reqs;
}

int openDevComms(std::vector<Rank>& ranks) {
  const int n = int(ranks.size());
  ncclDevCommRequirements_t reqs = requirements();
  for (Rank& rank : ranks) {
    std::memset(&rank.dev, 0xcd, sizeof(rank.dev));
  }
  CHILD_NCCL(ncclGroupStart());
  ncclResult_t result = ncclSuccess;
  for (int r = 0; r < n && result == ncclSuccess; r++) {
    result = ncclDevCommCreate(ranks[r].comm, &reqs, &ranks[r].dev.devComm);
  }
  CHILD_NCCL(result);
  CHILD_NCCL(ncclGroupEnd());
  for (int r = 0; r < n; r++) {
    const ncclDevComm& d = ranks[r].dev.devComm;
    ranks[r].devCommMade = true;
    for (unsigned char byte : ranks[r].dev.tail) CHILD_EXPECT(byte == 0xcd);
    CHILD_EXPECT(d.rank == r && d.nRanks == n && d.lsaRank == r && d.lsaSize == n);
    CHILD_EXPECT(d.lsaBarrier.nBarriers == kBlocks);
    CHILD_EXPECT(d.windowTable != nullptr && d.resourceWindow != nullptr);
    CHILD_EXPECT(d.lsaMultimem.mcBasePtr == nullptr);
#if NCCL_VERSION_CODE >= 22907
    CHILD_EXPECT(d.abortFlag != nullptr);
#endif
#if NCCL_VERSION_CODE >= 23000
    CHILD_EXPECT(d.magic == NCCL_API_MAGIC && d.version == reqs.version);
#endif
  }
  return 0;
}

// Fresh random inputs (different per rank and pass), poisoned outputs, one AllReduce, exact sums.
int runAllReduce(std::vector<Rank>& ranks, int pass) {
  const int n = int(ranks.size());
  std::vector<std::vector<Elem>> in(n, std::vector<Elem>(kCount));
  for (int r = 0; r < n; r++) {
    std::mt19937 gen(uint32_t(1000003 * (r + 1) + 7919 * pass));
    for (Elem& x : in[r]) x = Elem(gen());
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(gputest::uploadSync(ranks[r].send + kPad, in[r].data(), kCount * sizeof(Elem)));
    CHILD_CUDA(gputest::poisonSync(ranks[r].recv, 0xa5, (kPad + kCount) * sizeof(Elem)));
  }
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(r));
    lsaAllReduce<<<kBlocks, kThreads, 0, ranks[r].stream>>>(ranks[r].sendWin, kPad * sizeof(Elem), ranks[r].recvWin,
                                                            kPad * sizeof(Elem), kCount, ranks[r].dev.devComm);
    CHILD_CUDA(cudaGetLastError());
  }
  for (int r = 0; r < n; r++) {
    std::vector<Elem> out(kPad + kCount);
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(waitStream(ranks[r].stream, kKernelSeconds));
    CHILD_CUDA(cudaMemcpy(out.data(), ranks[r].recv, out.size() * sizeof(Elem), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kPad; i++) CHILD_EXPECT(out[i] == 0xa5a5a5a5u);  // before the offset: untouched
    for (size_t i = 0; i < kCount; i++) {
      Elem sum = 0;
      for (int q = 0; q < n; q++) sum += in[q][i];
      if (out[kPad + i] != sum) {
        std::fprintf(stderr, "pass %d rank %d element %zu: %u, expected %u\n", pass, r, i, out[kPad + i], sum);
        return 1;
      }
    }
  }
  return 0;
}

// What the kernel reads of its communicator is what the host reads, and what the communicator says.
int runReadFields(std::vector<Rank>& ranks) {
  const int n = int(ranks.size());
  for (int r = 0; r < n; r++) {
    int host[kFields], dev[kFields];
    int rank = -1, count = -1;
    CHILD_NCCL(ncclCommUserRank(ranks[r].comm, &rank));
    CHILD_NCCL(ncclCommCount(ranks[r].comm, &count));
    CHILD_CUDA(cudaSetDevice(r));
    CHILD_CUDA(gputest::poisonSync(ranks[r].fields, 0xff, sizeof(dev)));
    readFields<<<1, 1, 0, ranks[r].stream>>>(ranks[r].dev.devComm, ranks[r].fields);
    CHILD_CUDA(cudaGetLastError());
    CHILD_CUDA(waitStream(ranks[r].stream, kKernelSeconds));
    CHILD_CUDA(cudaMemcpy(dev, ranks[r].fields, sizeof(dev), cudaMemcpyDeviceToHost));
    const ncclDevComm& d = ranks[r].dev.devComm;
    const int want[kFields] = {d.rank, d.nRanks, d.lsaSize, d.lsaRank, d.lsaRank, d.lsaSize, d.lsaBarrier.nBarriers};
    std::memcpy(host, want, sizeof(host));
    for (int f = 0; f < kFields; f++) {
      if (dev[f] != host[f]) {
        std::fprintf(stderr, "rank %d: field %d reads %d on the GPU, %d on the host\n", r, f, dev[f], host[f]);
        return 1;
      }
    }
    CHILD_EXPECT(dev[0] == rank && dev[1] == count && dev[2] == count && dev[3] == rank);
  }
  return 0;
}

// Device communicators, then windows, then memory and communicators; every step must succeed.
int closeAll(std::vector<Rank>& ranks) {
  CHILD_NCCL(ncclGroupStart());
  for (Rank& rank : ranks) {
    if (rank.devCommMade) CHILD_NCCL(ncclDevCommDestroy(rank.comm, &rank.dev.devComm));
  }
  CHILD_NCCL(ncclGroupEnd());
  CHILD_NCCL(ncclGroupStart());
  for (Rank& rank : ranks) {
    if (rank.sendWin) CHILD_NCCL(ncclCommWindowDeregister(rank.comm, rank.sendWin));
    if (rank.recvWin) CHILD_NCCL(ncclCommWindowDeregister(rank.comm, rank.recvWin));
  }
  CHILD_NCCL(ncclGroupEnd());
  for (size_t r = 0; r < ranks.size(); r++) {
    CHILD_CUDA(cudaSetDevice(int(r)));
    if (ranks[r].send) CHILD_NCCL(ncclMemFree(ranks[r].send));
    if (ranks[r].recv) CHILD_NCCL(ncclMemFree(ranks[r].recv));
    if (ranks[r].fields) CHILD_CUDA(cudaFree(ranks[r].fields));
    if (ranks[r].stream) CHILD_CUDA(cudaStreamDestroy(ranks[r].stream));
    CHILD_NCCL(ncclCommDestroy(ranks[r].comm));
  }
  return 0;
}

int runKernels(int n) {
  cudaFuncAttributes attr;
  CHILD_CUDA(cudaFuncGetAttributes(&attr, lsaAllReduce));  // device code for this GPU is in the binary
  CHILD_CUDA(cudaFuncGetAttributes(&attr, readFields));
  std::vector<ncclComm_t> comms(n);
  CHILD_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
  std::vector<Rank> ranks(n);
  for (int r = 0; r < n; r++) ranks[r].comm = comms[r];
  if (openWindows(ranks) != 0 || openDevComms(ranks) != 0) {
    closeAll(ranks);
    return 1;
  }
  for (int pass = 0; pass < 2; pass++) {  // the second pass starts from the epochs the first left
    if (runAllReduce(ranks, pass) != 0) return 1;
  }
  if (runReadFields(ranks) != 0) return 1;
  return closeAll(ranks);
}

TEST(DeviceApiNvidiaKernels, DevCommSizeOfTheRelease) {
  std::printf("NVIDIA's NCCL %d headers: sizeof(ncclDevComm) %zu, sizeof(ncclDevCommRequirements) %zu\n",
              NCCL_VERSION_CODE, sizeof(ncclDevComm), sizeof(ncclDevCommRequirements));
  EXPECT_EQ(sizeof(ncclDevComm), kDevCommBytes);
}

TEST(DeviceApiNvidiaKernels, LsaAllReduceAndFieldsOnEveryGpu) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, gputest::runInChild([n] { return runKernels(n); }));
}

}  // namespace
