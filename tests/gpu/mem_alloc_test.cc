// ncclMemAlloc / ncclMemFree on real GPUs: device memory of the current GPU, usable by copies and
// collectives, read/write-mapped for every peer GPU that can reach it, freed without a trace over
// 1,000 cycles; freeing a pointer that is not an allocation's start (or twice) is refused.
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"

namespace {

constexpr unsigned kWatchdogSeconds = 120;

// Writes a pattern through the allocation and reads it back.
int roundTrip(void* ptr, size_t bytes, uint8_t seed) {
  std::vector<uint8_t> in(bytes), out(bytes, 0);
  for (size_t i = 0; i < bytes; i++) in[i] = static_cast<uint8_t>(seed + i * 131);
  CHILD_CUDA(gputest::uploadSync(ptr, in.data(), bytes));
  CHILD_CUDA(cudaMemcpy(out.data(), ptr, bytes, cudaMemcpyDeviceToHost));
  CHILD_EXPECT(in == out);
  return 0;
}

TEST(MemAlloc, DeviceMemoryOfTheCurrentGpuInEverySize) {
  EXPECT_EQ(0, gputest::runInChild([] {
              alarm(kWatchdogSeconds);
              for (int dev = 0; dev < gputest::gpuCount(); dev++) {
                CHILD_CUDA(cudaSetDevice(dev));
                for (size_t bytes : {size_t{1}, size_t{4097}, size_t{(3 << 20) + 1}, size_t{64} << 20}) {
                  size_t freeBefore = 0, freeDuring = 0, freeAfter = 0, total = 0;
                  CHILD_CUDA(cudaMemGetInfo(&freeBefore, &total));
                  void* p = nullptr;
                  CHILD_NCCL(ncclMemAlloc(&p, bytes));
                  CHILD_EXPECT(p != nullptr);
                  cudaPointerAttributes attr{};
                  CHILD_CUDA(cudaPointerGetAttributes(&attr, p));
                  CHILD_EXPECT(attr.type == cudaMemoryTypeDevice);
                  CHILD_EXPECT(attr.device == dev);
                  CHILD_CUDA(cudaMemGetInfo(&freeDuring, &total));
                  CHILD_EXPECT(freeBefore - freeDuring >= bytes);
                  if (roundTrip(p, bytes, static_cast<uint8_t>(dev)) != 0) return 1;
                  CHILD_NCCL(ncclMemFree(p));
                  CHILD_CUDA(cudaMemGetInfo(&freeAfter, &total));
                  CHILD_EXPECT(freeAfter == freeBefore);
                }
              }
              return 0;
            }));
}

// cuMemGetAccess through the runtime's driver entry point (the test does not link libcuda).
using CuMemGetAccess = CUresult (*)(unsigned long long*, const CUmemLocation*, CUdeviceptr);

TEST(MemAlloc, EveryPeerGpuThatCanReachItMayReadAndWrite) {
  if (gputest::gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  if (colltest::againstReference()) GTEST_SKIP() << "checks Braid's mapping";
  EXPECT_EQ(
      0, gputest::runInChild([] {
        alarm(kWatchdogSeconds);
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found{};
        CHILD_CUDA(cudaGetDriverEntryPointByVersion("cuMemGetAccess", &fn, 12000, cudaEnableDefault, &found));
        CHILD_EXPECT(found == cudaDriverEntryPointSuccess);
        auto getAccess = reinterpret_cast<CuMemGetAccess>(fn);
        const int n = gputest::gpuCount();
        for (int owner = 0; owner < n; owner++) {
          CHILD_CUDA(cudaSetDevice(owner));
          void* p = nullptr;
          CHILD_NCCL(ncclMemAlloc(&p, 1 << 20));
          for (int dev = 0; dev < n; dev++) {
            int can = dev == owner ? 1 : 0;
            if (dev != owner) CHILD_CUDA(cudaDeviceCanAccessPeer(&can, dev, owner));
            CUmemLocation where{};
            where.type = CU_MEM_LOCATION_TYPE_DEVICE;
            where.id = dev;
            unsigned long long flags = 0;
            CHILD_EXPECT(getAccess(&flags, &where, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS);
            CHILD_EXPECT(flags == (can != 0 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE));
          }
          // A peer's copy engine writes into it directly.
          const int peer = (owner + 1) % n;
          CHILD_CUDA(cudaSetDevice(peer));
          void* src = nullptr;
          CHILD_CUDA(cudaMalloc(&src, 1 << 20));
          CHILD_CUDA(cudaMemset(src, 0x5A, 1 << 20));
          CHILD_CUDA(cudaMemcpyPeer(p, owner, src, peer, 1 << 20));
          std::vector<uint8_t> host(1 << 20);
          CHILD_CUDA(cudaMemcpy(host.data(), p, host.size(), cudaMemcpyDeviceToHost));
          for (uint8_t b : host) CHILD_EXPECT(b == 0x5A);
          CHILD_CUDA(cudaFree(src));
          CHILD_NCCL(ncclMemFree(p));
        }
        return 0;
      }));
}

// The documented use: communication buffers from ncclMemAlloc, here an AllReduce on every GPU.
TEST(MemAlloc, BuffersOfACollective) {
  const int n = gputest::allGpuRanks();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(0, gputest::runInChild([n] {
              alarm(kWatchdogSeconds);
              std::vector<ncclComm_t> comms(n);
              CHILD_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
              const size_t count = (1 << 20) + 3;
              std::vector<int32_t*> bufs(n);
              std::vector<cudaStream_t> streams(n);
              for (int r = 0; r < n; r++) {
                CHILD_CUDA(cudaSetDevice(r));
                CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&bufs[r]), count * sizeof(int32_t)));
                std::vector<int32_t> in(count);
                for (size_t i = 0; i < count; i++) in[i] = static_cast<int32_t>(i * (r + 1));
                CHILD_CUDA(gputest::uploadSync(bufs[r], in.data(), count * sizeof(int32_t)));
                CHILD_CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
              }
              CHILD_NCCL(ncclGroupStart());
              for (int r = 0; r < n; r++) {
                CHILD_NCCL(ncclAllReduce(bufs[r], bufs[r], count, ncclInt32, ncclSum, comms[r], streams[r]));
              }
              CHILD_NCCL(ncclGroupEnd());
              const int32_t factor = n * (n + 1) / 2;
              for (int r = 0; r < n; r++) {
                CHILD_CUDA(cudaSetDevice(r));
                CHILD_CUDA(cudaStreamSynchronize(streams[r]));
                std::vector<int32_t> out(count);
                CHILD_CUDA(cudaMemcpy(out.data(), bufs[r], count * sizeof(int32_t), cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < count; i++) CHILD_EXPECT(out[i] == static_cast<int32_t>(i * factor));
                CHILD_NCCL(ncclCommDestroy(comms[r]));
                CHILD_NCCL(ncclMemFree(bufs[r]));
              }
              return 0;
            }));
}

TEST(MemAlloc, AThousandCyclesLeaveNothingBehind) {
  EXPECT_EQ(0, gputest::runInChild([] {
              alarm(kWatchdogSeconds);
              CHILD_CUDA(cudaSetDevice(0));
              size_t freeBefore = 0, freeAfter = 0, total = 0;
              void* warm = nullptr;
              CHILD_NCCL(ncclMemAlloc(&warm, 2 << 20));
              CHILD_NCCL(ncclMemFree(warm));
              CHILD_CUDA(cudaMemGetInfo(&freeBefore, &total));
              for (int i = 0; i < 1000; i++) {
                void* p = nullptr;
                CHILD_NCCL(ncclMemAlloc(&p, (2 << 20) + i));
                CHILD_NCCL(ncclMemFree(p));
              }
              CHILD_CUDA(cudaMemGetInfo(&freeAfter, &total));
              std::fprintf(stderr, "device free %zu -> %zu bytes\n", freeBefore, freeAfter);
              CHILD_EXPECT(freeAfter == freeBefore);
              return 0;
            }));
}

TEST(MemAlloc, FreeingAnythingButALiveAllocationIsRefused) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's checks";
  EXPECT_EQ(0, gputest::runInChild([] {
              CHILD_CUDA(cudaSetDevice(0));
              void* p = nullptr;
              CHILD_NCCL(ncclMemAlloc(&p, 1 << 20));
              CHILD_EXPECT(ncclMemFree(static_cast<char*>(p) + 4096) == ncclInvalidArgument);
              CHILD_NCCL(ncclMemFree(p));
              CHILD_EXPECT(ncclMemFree(p) == ncclInvalidArgument);
              return 0;
            }));
}

}  // namespace
