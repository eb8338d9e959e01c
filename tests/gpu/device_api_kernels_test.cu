// Kernels written against Braid's nccl_device.h, as a program of its own would write them: a one-shot
// LSA AllReduce between two barriers, the same with ncclLsaReduceSumCopy, an AllGather that pushes through symmetric
// pointers, an LL all-to-all exchange over several epochs, warp-wide barriers, hybrid barriers and ncclFindWindow.
// They run on device communicators of the library, with every GPU of the machine as one LSA team, and their results
// are checked exactly. Device communicators that ask for what Braid lacks are refused without a trace. The kernels
// build for sm_80 and sm_90 whatever the build's own architectures (tests/gpu/CMakeLists.txt).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <nccl_device.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_util.h"

namespace {

constexpr int kBlocks = 4;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSlotsPerPeer = 3;  // LL all-to-all values each rank sends each peer per epoch
constexpr int kRounds = 3;        // LL all-to-all epochs (both banks, twice one of them)
constexpr uint64_t kTimeoutCycles = 20ull * 1000 * 1000 * 1000;  // some seconds: only a hang trips it

// ---- Kernels ----

// One-shot AllReduce: every rank reads every peer's input through LSA and sums in rank order, so
// that all ranks produce the same bits. The first barrier makes the peers' inputs visible (acquire)
// and the last keeps them from being rewritten while a peer still reads them (release).
template <typename T>
__global__ void lsaAllReduceOneShot(ncclWindow_t sendWin, size_t sendOffset, ncclWindow_t recvWin, size_t recvOffset,
                                    size_t count, ncclDevComm devComm) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), devComm, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  const int nPeers = devComm.lsaSize;
  T* out = static_cast<T*>(ncclGetLocalPointer(recvWin, recvOffset));
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    T sum = T(0);
    for (int peer = 0; peer < nPeers; peer++)
      sum += static_cast<T const*>(ncclGetLsaPointer(sendWin, sendOffset, peer))[i];
    out[i] = sum;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// AllGather by pushing: each rank stores its block into every peer's output at its own rank's
// place, starting with the next peer so that the ranks do not all hit one GPU first. The closing
// barrier is the timed form; its result goes to ok[blockIdx.x].
template <typename T>
__global__ void lsaAllGather(ncclSymPtr<T> send, ncclSymPtr<T> recv, size_t count, ncclDevComm devComm, int* ok) {
  ncclTeam lsa = ncclTeamLsa(devComm);
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), devComm, lsa, devComm.lsaBarrier, blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // no peer still reads last use's output
  const T* mine = send.localPtr();
  ncclSymPtr<T> place = recv + size_t(lsa.rank) * count;
  for (int n = 1; n <= lsa.nRanks; n++) {
    int peer = (lsa.rank + n) % lsa.nRanks;
    T* dst = place.peerPtr(lsa, peer);
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
      dst[i] = mine[i];
    }
  }
  ncclResult_t result = bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel, kTimeoutCycles);
  if (threadIdx.x == 0) ok[blockIdx.x] = (result == ncclSuccess);
}

// AllReduce through the reduce-copy building block: rank r sums its share of the elements over the
// team and stores the sum into every member's output (a reduce-scatter and an all-gather in one
// pass). The shares start at arbitrary elements, so the 16-byte packs have a head and a tail.
template <typename T>
__global__ void lsaReduceSumCopyAllReduce(ncclSymPtr<T> send, ncclSymPtr<T> recv, size_t count, ncclDevComm devComm) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), devComm, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  ncclTeam lsa = ncclTeamLsa(devComm);
  size_t share = (count + lsa.nRanks - 1) / lsa.nRanks;
  size_t begin = min(count, share * lsa.rank), end = min(count, begin + share);
  size_t perBlock = (end - begin + gridDim.x - 1) / gridDim.x;
  size_t from = min(end, begin + perBlock * blockIdx.x), to = min(end, from + perBlock);
  ncclLsaReduceSumCopy(ncclCoopCta(), send + from, recv + from, to - from, devComm);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// The value rank `from` sends rank `to` in slot s of epoch `round`.
__host__ __device__ inline ulonglong2 llValue(int round, int from, int to, int s) {
  uint64_t tag = (uint64_t(round) << 48) | (uint64_t(from) << 32) | (uint64_t(to) << 16) | uint64_t(s);
  return make_ulonglong2(tag, ~tag * 0x9e3779b97f4a7c15ull);
}

// LL all-to-all: in each epoch every rank sends each peer kSlotsPerPeer 16-byte values (two slots
// each, maxElts apart), into the slots named after the sender, then receives all of its own.
__global__ void lla2aExchange(ncclDevComm devComm, ncclLLA2AHandle handle, ulonglong2* out) {
  ncclTeam lsa = ncclTeamLsa(devComm);
  const int elts = lsa.nRanks * kSlotsPerPeer;
  ncclLLA2ASession<ncclCoopCta> ll(ncclCoopCta(), devComm, lsa, handle, blockIdx.x, elts);
  for (int round = 0; round < kRounds; round++) {
    for (int i = threadIdx.x; i < elts; i += blockDim.x) {
      int peer = i / kSlotsPerPeer, s = i % kSlotsPerPeer;
      ll.send(peer, lsa.rank * kSlotsPerPeer + s, llValue(round, lsa.rank, peer, s));
    }
    for (int i = threadIdx.x; i < elts; i += blockDim.x) {
      out[(size_t(blockIdx.x) * kRounds + round) * elts + i] = ll.recv<ulonglong2>(i);
    }
    ll.endEpoch(ncclCoopCta());
  }
}

// Barriers of one warp each (lsaBarrierCount covers kBlocks * kWarps), twice, counted in *passed.
__global__ void warpBarriers(ncclDevComm devComm, int* passed) {
  int warp = threadIdx.x / 32;
  ncclLsaBarrierSession<ncclCoopWarp> bar(ncclCoopWarp(), devComm, ncclTeamTagLsa(), blockIdx.x * kWarps + warp);
  bar.sync(ncclCoopWarp(), cuda::memory_order_acq_rel);
  bar.arrive(ncclCoopWarp(), cuda::memory_order_release);
  bar.wait(ncclCoopWarp(), cuda::memory_order_acquire);
  if (nccl::utility::lane() == 0) atomicAdd(passed, 1);
}

// ncclFindWindow names the window holding a pointer (through the communicator's table of windows),
// and the hybrid barrier set (barrierCount) syncs the LSA team.
__global__ void findWindowAndHybridBarrier(ncclDevComm devComm, const void* inside, ncclWindow_t expected, int* ok) {
  ncclWindow_t found = ncclFindWindow(ncclCoopCta(), devComm, inside);
  ncclBarrierSession<ncclCoopCta> hybrid(ncclCoopCta(), ncclTeamTagLsa(), devComm, blockIdx.x);
  hybrid.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  if (threadIdx.x == 0) ok[blockIdx.x] = (found == expected) ? 1 : 0;
}

// Never launched: makes the rest of the header's templates compile for every architecture built.
__global__ void headerInstantiations(ncclDevComm devComm, ncclWindow_t win, ncclLLA2AHandle handle, float* out) {
  ncclCoopAny any(ncclCoopTile<8>{});
  ncclCoopLanes lanes = ncclCoopCoalesced();
  ncclCoopWarpSpan span(0, 2, 1);
  int v = ncclCoopBcast(ncclCoopTile<8>(), int(threadIdx.x), 0) + ncclCoopBcast(lanes, 1, 0) +
          ncclCoopBcast(span, 2, 0) + ncclCoopBcast(ncclCoopCta(), 3, 0) + any.size() + lanes.thread_rank();
  ncclLLA2ASession<ncclCoopWarp> ll(ncclCoopWarp(), devComm, ncclTeamLsa(devComm), handle, 0, 4);
  ll.bcast(0, 1.5f);
  float sum = ll.recvReduce<2, float>(
      0, 4, 1, [](float x) { return x; }, [](float a, float b) { return a + b; });
  ncclWindow_t found = ncclFindWindow(ncclCoopWarp(), devComm, out);
  ncclSymPtr<float> p = ncclGetResourceBuffer(devComm, 0);
  float* mm = ncclSymPtr<float>(win, 0).lsaMultimemPtr(devComm);
  ncclTeam rail = ncclTeamRail(devComm);
  ncclBarrierSession<ncclCoopCta> hybrid(ncclCoopCta(), ncclTeamTagLsa(), devComm, 0);
  hybrid.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  out[threadIdx.x] = sum + v + (found != nullptr) + (mm != nullptr) + *p.lsaPtr(ncclTeamRankToLsa(devComm, rail, 0));
  ll.endEpoch(ncclCoopWarp());
}

// ---- Host side ----

using Elem = uint32_t;  // sums wrap exactly

Elem input(int rank, size_t i) { return Elem((rank + 1) * 2654435761u) ^ Elem(i * 40503u + 17); }

struct Rank {
  int dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  Elem* send = nullptr;  // kPad + count elements; the window starts at the allocation
  Elem* recv = nullptr;  // kPad + count * nranks elements
  ncclWindow_t sendWin = nullptr, recvWin = nullptr;
  ncclDevComm devComm{};
  ncclLLA2AHandle lla{};
  ulonglong2* llOut = nullptr;
  int* flags = nullptr;  // kBlocks AllGather results, then the warp barrier count
};

constexpr size_t kCount = (1 << 16) + 3;  // odd: blocks end mid-vector
constexpr size_t kPad = 64;               // the data starts this many elements into each window

bool lastErrorNames(const char* text) { return std::string(ncclGetLastError(nullptr)).find(text) != std::string::npos; }

// The kernels exist for this GPU's architecture (the binary carries sm_80 and sm_90 code).
int checkKernelImages() {
  cudaFuncAttributes attr;
  CHILD_CUDA(cudaFuncGetAttributes(&attr, lsaAllReduceOneShot<Elem>));
  CHILD_CUDA(cudaFuncGetAttributes(&attr, lsaReduceSumCopyAllReduce<Elem>));
  CHILD_CUDA(cudaFuncGetAttributes(&attr, lsaAllGather<Elem>));
  CHILD_CUDA(cudaFuncGetAttributes(&attr, lla2aExchange));
  CHILD_CUDA(cudaFuncGetAttributes(&attr, warpBarriers));
  CHILD_CUDA(cudaFuncGetAttributes(&attr, findWindowAndHybridBarrier));
  CHILD_CUDA(cudaFuncGetAttributes(&attr, headerInstantiations));
  CHILD_EXPECT(attr.maxThreadsPerBlock >= kThreads);
  return 0;
}

// Buffers and windows on every rank (collective: one group over the ranks).
int openWindows(std::vector<Rank>& ranks) {
  const int n = static_cast<int>(ranks.size());
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
    CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&ranks[r].send), (kPad + kCount) * sizeof(Elem)));
    CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&ranks[r].recv), (kPad + kCount * n) * sizeof(Elem)));
    CHILD_CUDA(cudaMalloc(&ranks[r].llOut, sizeof(ulonglong2) * kBlocks * kRounds * n * kSlotsPerPeer));
    CHILD_CUDA(cudaMalloc(&ranks[r].flags, sizeof(int) * (kBlocks + 1)));
  }
  CHILD_NCCL(ncclGroupStart());
  ncclResult_t result = ncclSuccess;
  for (int r = 0; r < n && result == ncclSuccess; r++) {
    result = ncclCommWindowRegister(ranks[r].comm, ranks[r].send, (kPad + kCount) * sizeof(Elem), &ranks[r].sendWin, 0);
    if (result == ncclSuccess) {
      result = ncclCommWindowRegister(ranks[r].comm, ranks[r].recv, (kPad + kCount * n) * sizeof(Elem),
                                      &ranks[r].recvWin, 0);
    }
  }
  CHILD_NCCL(result);
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// The device communicators: barriers for every block and every warp, hybrid barriers for every block
// (within one LSA team they need no GIN), and one LL all-to-all block per thread block.
int openDevComms(std::vector<Rank>& ranks) {
  const int n = static_cast<int>(ranks.size());
  std::vector<ncclDevResourceRequirements_t> llReqs(n);
  CHILD_NCCL(ncclGroupStart());
  ncclResult_t result = ncclSuccess;
  for (int r = 0; r < n && result == ncclSuccess; r++) {
    result = ncclLLA2ACreateRequirement(kBlocks, ncclLLA2ACalcSlots(n * kSlotsPerPeer, sizeof(ulonglong2)),
                                        &ranks[r].lla, &llReqs[r]);
    if (result != ncclSuccess) break;
    ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.lsaBarrierCount = kBlocks * kWarps;
    reqs.barrierCount = kBlocks;
    reqs.resourceRequirementsList = &llReqs[r];
    result = ncclDevCommCreate(ranks[r].comm, &reqs, &ranks[r].devComm);
  }
  CHILD_NCCL(result);
  CHILD_NCCL(ncclGroupEnd());
  for (const Rank& rank : ranks) {
    CHILD_EXPECT(rank.devComm.lsaSize == n && rank.devComm.nRanks == n);
    CHILD_EXPECT(rank.devComm.lsaMultimem.mcBasePtr == nullptr && rank.devComm.ginConnectionCount == 0);
    CHILD_EXPECT(rank.devComm.magic == NCCL_API_MAGIC && rank.devComm.abortFlag != nullptr);
    CHILD_EXPECT(rank.devComm.windowTable != nullptr && rank.devComm.resourceWindow != nullptr);
    CHILD_EXPECT(rank.devComm.lsaBarrier.nBarriers == kBlocks * kWarps &&
                 rank.devComm.hybridLsaBarrier.nBarriers == kBlocks);
  }
  return 0;
}

int runFindWindow(std::vector<Rank>& ranks) {
  const int n = static_cast<int>(ranks.size());
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(gputest::poisonSync(ranks[r].flags, 0, sizeof(int) * kBlocks));
    findWindowAndHybridBarrier<<<kBlocks, kThreads, 0, ranks[r].stream>>>(ranks[r].devComm, ranks[r].recv + kPad + 5,
                                                                          ranks[r].recvWin, ranks[r].flags);
    CHILD_CUDA(cudaGetLastError());
  }
  for (int r = 0; r < n; r++) {
    int ok[kBlocks];
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(cudaStreamSynchronize(ranks[r].stream));
    CHILD_CUDA(cudaMemcpy(ok, ranks[r].flags, sizeof(ok), cudaMemcpyDeviceToHost));
    for (int b = 0; b < kBlocks; b++) CHILD_EXPECT(ok[b] == 1);
  }
  return 0;
}

// The AllReduce by one-shot LSA reads (reduceCopy false) or by ncclLsaReduceSumCopy (true).
int runAllReduce(std::vector<Rank>& ranks, bool reduceCopy) {
  const int n = static_cast<int>(ranks.size());
  for (int r = 0; r < n; r++) {
    std::vector<Elem> in(kCount);
    for (size_t i = 0; i < kCount; i++) in[i] = input(r, i);
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(gputest::uploadSync(ranks[r].send + kPad, in.data(), kCount * sizeof(Elem)));
    CHILD_CUDA(gputest::poisonSync(ranks[r].recv, 0xa5, (kPad + kCount * n) * sizeof(Elem)));
  }
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    if (reduceCopy) {
      ncclSymPtr<Elem> send(ranks[r].sendWin, kPad * sizeof(Elem)), recv(ranks[r].recvWin, kPad * sizeof(Elem));
      lsaReduceSumCopyAllReduce<Elem><<<kBlocks, kThreads, 0, ranks[r].stream>>>(send, recv, kCount, ranks[r].devComm);
    } else {
      lsaAllReduceOneShot<Elem><<<kBlocks, kThreads, 0, ranks[r].stream>>>(
          ranks[r].sendWin, kPad * sizeof(Elem), ranks[r].recvWin, kPad * sizeof(Elem), kCount, ranks[r].devComm);
    }
    CHILD_CUDA(cudaGetLastError());
  }
  for (int r = 0; r < n; r++) {
    std::vector<Elem> out(kPad + kCount);
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(cudaStreamSynchronize(ranks[r].stream));
    CHILD_CUDA(cudaMemcpy(out.data(), ranks[r].recv, out.size() * sizeof(Elem), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kPad; i++) CHILD_EXPECT(out[i] == 0xa5a5a5a5u);  // before the offset: untouched
    for (size_t i = 0; i < kCount; i++) {
      Elem sum = 0;
      for (int q = 0; q < n; q++) sum += input(q, i);
      CHILD_EXPECT(out[kPad + i] == sum);
    }
  }
  return 0;
}

int runAllGather(std::vector<Rank>& ranks) {
  const int n = static_cast<int>(ranks.size());
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(gputest::poisonSync(ranks[r].recv, 0x5a, (kPad + kCount * n) * sizeof(Elem)));
    CHILD_CUDA(gputest::poisonSync(ranks[r].flags, 0, sizeof(int) * (kBlocks + 1)));
  }
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    ncclSymPtr<Elem> send(ranks[r].sendWin, kPad * sizeof(Elem)), recv(ranks[r].recvWin, kPad * sizeof(Elem));
    lsaAllGather<Elem><<<kBlocks, kThreads, 0, ranks[r].stream>>>(send, recv, kCount, ranks[r].devComm, ranks[r].flags);
    CHILD_CUDA(cudaGetLastError());
  }
  for (int r = 0; r < n; r++) {
    std::vector<Elem> out(kPad + kCount * n);
    int ok[kBlocks];
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(cudaStreamSynchronize(ranks[r].stream));
    CHILD_CUDA(cudaMemcpy(out.data(), ranks[r].recv, out.size() * sizeof(Elem), cudaMemcpyDeviceToHost));
    CHILD_CUDA(cudaMemcpy(ok, ranks[r].flags, sizeof(ok), cudaMemcpyDeviceToHost));
    for (int b = 0; b < kBlocks; b++) CHILD_EXPECT(ok[b] == 1);
    for (size_t i = 0; i < kPad; i++) CHILD_EXPECT(out[i] == 0x5a5a5a5au);
    for (int q = 0; q < n; q++) {
      for (size_t i = 0; i < kCount; i++) CHILD_EXPECT(out[kPad + q * kCount + i] == input(q, i));
    }
  }
  return 0;
}

int runLla2aAndWarpBarriers(std::vector<Rank>& ranks) {
  const int n = static_cast<int>(ranks.size());
  const size_t outElems = size_t(kBlocks) * kRounds * n * kSlotsPerPeer;
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(gputest::poisonSync(ranks[r].llOut, 0x3c, outElems * sizeof(ulonglong2)));
    CHILD_CUDA(gputest::poisonSync(ranks[r].flags + kBlocks, 0, sizeof(int)));
  }
  for (int r = 0; r < n; r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    lla2aExchange<<<kBlocks, kThreads, 0, ranks[r].stream>>>(ranks[r].devComm, ranks[r].lla, ranks[r].llOut);
    warpBarriers<<<kBlocks, kThreads, 0, ranks[r].stream>>>(ranks[r].devComm, ranks[r].flags + kBlocks);
    CHILD_CUDA(cudaGetLastError());
  }
  for (int r = 0; r < n; r++) {
    std::vector<ulonglong2> out(outElems);
    int passed = 0;
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    CHILD_CUDA(cudaStreamSynchronize(ranks[r].stream));
    CHILD_CUDA(cudaMemcpy(out.data(), ranks[r].llOut, outElems * sizeof(ulonglong2), cudaMemcpyDeviceToHost));
    CHILD_CUDA(cudaMemcpy(&passed, ranks[r].flags + kBlocks, sizeof(int), cudaMemcpyDeviceToHost));
    CHILD_EXPECT(passed == kBlocks * kWarps);
    for (size_t k = 0; k < outElems; k++) {
      int i = int(k % (n * kSlotsPerPeer));
      int round = int(k / (n * kSlotsPerPeer) % kRounds);
      ulonglong2 want = llValue(round, i / kSlotsPerPeer, r, i % kSlotsPerPeer);
      CHILD_EXPECT(out[k].x == want.x && out[k].y == want.y);
    }
  }
  return 0;
}

int closeAll(std::vector<Rank>& ranks, bool devComms, bool windows) {
  CHILD_NCCL(ncclGroupStart());
  for (Rank& rank : ranks) {
    if (devComms) CHILD_NCCL(ncclDevCommDestroy(rank.comm, &rank.devComm));
    if (windows && rank.sendWin) CHILD_NCCL(ncclCommWindowDeregister(rank.comm, rank.sendWin));
    if (windows && rank.recvWin) CHILD_NCCL(ncclCommWindowDeregister(rank.comm, rank.recvWin));
  }
  CHILD_NCCL(ncclGroupEnd());
  for (size_t r = 0; r < ranks.size(); r++) {
    CHILD_CUDA(cudaSetDevice(ranks[r].dev));
    if (ranks[r].send) CHILD_NCCL(ncclMemFree(ranks[r].send));
    if (ranks[r].recv) CHILD_NCCL(ncclMemFree(ranks[r].recv));
    if (ranks[r].llOut) CHILD_CUDA(cudaFree(ranks[r].llOut));
    if (ranks[r].flags) CHILD_CUDA(cudaFree(ranks[r].flags));
    if (ranks[r].stream) CHILD_CUDA(cudaStreamDestroy(ranks[r].stream));
    CHILD_NCCL(ncclCommDestroy(ranks[r].comm));
  }
  return 0;
}

// `n` ranks of one communicator, rank r on GPU r; the whole run in one child process.
int runKernels(int n) {
  std::vector<int> devs(n);
  for (int r = 0; r < n; r++) devs[r] = r;
  std::vector<ncclComm_t> comms(n);
  CHILD_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<Rank> ranks(n);
  for (int r = 0; r < n; r++) {
    ranks[r].comm = comms[r];
    ranks[r].dev = devs[r];
  }
  if (checkKernelImages() != 0) return 1;
  if (openWindows(ranks) != 0) return closeAll(ranks, false, false) == 0 ? 1 : 2;
  if (openDevComms(ranks) != 0) return closeAll(ranks, false, true) == 0 ? 1 : 2;
  for (int pass = 0; pass < 2; pass++) {  // the second reuses the barriers' saved epochs
    if (runAllReduce(ranks, false) != 0 || runAllReduce(ranks, true) != 0 || runAllGather(ranks) != 0 ||
        runLla2aAndWarpBarriers(ranks) != 0 || runFindWindow(ranks) != 0) {
      return 1;
    }
  }
  return closeAll(ranks, true, true);
}

TEST(DeviceApiKernels, LsaAllReduceAllGatherAndLlAllToAll) {
  EXPECT_EQ(0, gputest::runInChild([] { return runKernels(gputest::allGpuRanks()); }));
}

// What Braid lacks is refused before anything is made or written; bad arguments are refused as
// such; a device communicator's resources go back with ncclDevCommDestroy only, and creating and
// destroying many leaves device memory where it was.
TEST(DeviceApiKernels, RefusalsMisuseAndMemory) {
  EXPECT_EQ(0, gputest::runInChild([] {
              CHILD_CUDA(cudaSetDevice(0));
              ncclComm_t comm = nullptr;
              CHILD_NCCL(ncclCommInitAll(&comm, 1, nullptr));
              ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
              CHILD_NCCL(ncclCommQueryProperties(comm, &props));
              CHILD_EXPECT(props.deviceApiSupport && !props.multimemSupport);
              ncclDevComm devComm;
              std::memset(&devComm, 0x77, sizeof(devComm));
              ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
              reqs.lsaMultimem = true;
              CHILD_EXPECT(ncclDevCommCreate(comm, &reqs, &devComm) == ncclInvalidUsage);
              CHILD_EXPECT(lastErrorNames("multicast"));
              reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
              reqs.ginSignalCount = 4;
              reqs.ginType = NCCL_GIN_TYPE_GDAKI;  // a GIN transport Braid does not have
              CHILD_EXPECT(ncclDevCommCreate(comm, &reqs, &devComm) == ncclInvalidUsage);
              CHILD_EXPECT(lastErrorNames("GIN"));
              CHILD_EXPECT(devComm.magic == 0x77777777u && devComm.lsaBarrier.nBarriers == 0x77777777);
              CHILD_EXPECT(ncclDevCommCreate(comm, nullptr, &devComm) == ncclInvalidArgument);
              CHILD_EXPECT(ncclDevCommCreate(comm, &reqs, nullptr) == ncclInvalidArgument);
              CHILD_EXPECT(ncclDevCommCreate(nullptr, &reqs, &devComm) == ncclInvalidArgument);

              reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
              reqs.lsaBarrierCount = 64;
              CHILD_NCCL(ncclDevCommCreate(comm, &reqs, &devComm));
              CHILD_EXPECT(ncclCommWindowDeregister(comm, devComm.resourceWindow) == ncclInvalidUsage);
              CHILD_NCCL(ncclDevCommDestroy(comm, &devComm));
              CHILD_EXPECT(ncclDevCommDestroy(comm, &devComm) == ncclInvalidArgument);
              ncclDevCommRequirements_t none = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
              CHILD_NCCL(ncclDevCommCreate(comm, &none, &devComm));  // nothing asked: no resource window
              CHILD_EXPECT(devComm.resourceWindow == nullptr && devComm.windowTable != nullptr);
              CHILD_NCCL(ncclDevCommDestroy(comm, &devComm));

              size_t freeBefore = 0, freeAfter = 0, total = 0;
              CHILD_NCCL(ncclDevCommCreate(comm, &reqs, &devComm));  // the first makes the table
              CHILD_NCCL(ncclDevCommDestroy(comm, &devComm));
              CHILD_CUDA(cudaMemGetInfo(&freeBefore, &total));
              for (int i = 0; i < 200; i++) {
                CHILD_NCCL(ncclDevCommCreate(comm, &reqs, &devComm));
                CHILD_NCCL(ncclDevCommDestroy(comm, &devComm));
              }
              CHILD_CUDA(cudaMemGetInfo(&freeAfter, &total));
              CHILD_EXPECT(freeAfter == freeBefore);
              CHILD_NCCL(ncclCommDestroy(comm));
              return 0;
            }));
}

}  // namespace
