// ncclAlltoAll with every datatype, ncclGather and ncclScatter from every root in and out of place
// (p2p_harness.h), and point-to-point and those collectives across emulated hosts (the socket
// network on loopback).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "p2p_harness.h"

namespace {

using namespace p2ptest;  // NOLINT(google-build-using-namespace): this family's harness

// Ring shifts of several sizes, then every pair with random sizes and self sends, across emulated
// hosts.
TEST_P(P2pAcrossHosts, RingShiftsAndRandomSizes) {
  const int n = this->n();
  acrossEmulatedHosts([n](std::vector<Rank>& ranks) {
    uint64_t seed = 31;
    for (size_t bytes : {size_t{1}, size_t{4099}, size_t{(1 << 20) + 5}, size_t{9 << 20}}) {
      if (exchange(ranks, ringShift(n, bytes), seed++) != 0) return 1;
    }
    Pattern p{n, [](int, int) { return 2; },
              [](int s, int d, int k) -> size_t {
                uint8_t r = pattern(5, s, d, k, 7);
                return r % 5 == 0 ? 0 : (static_cast<size_t>(r) * 7919u) % (3 << 20);
              },
              3};
    return exchange(ranks, p, seed);
  });
}

// ncclAlltoAll with every datatype over the ranks this thread drives (all of them, or one):
// block p of rank r's input is pattern(r, p) in bytes.
int alltoAllEveryDatatype(std::vector<Rank>& ranks, int n) {
  const ncclDataType_t types[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,   ncclInt64,      ncclUint64,
                                  ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  for (int t = 0; t < 12; t++) {
    for (size_t count : {size_t{3}, size_t{100003}}) {
      size_t block = count * braid::dtypeSize(types[t]);
      Pattern p{n, [](int, int) { return 1; }, [block](int, int, int) { return block; }};
      for (Rank& r : ranks) {
        if (prepare(r, p, 30 + t) != 0) return 1;
      }
      // ncclAlltoAll needs contiguous blocks: pack the pattern densely instead of the layout's slots.
      for (Rank& r : ranks) {
        std::vector<uint8_t> host(block * n);
        for (int d = 0; d < n; d++) {
          for (size_t i = 0; i < block; i++) host[d * block + i] = pattern(30 + t, r.rank, d, 0, i);
        }
        CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
        CHILD_CUDA(gputest::uploadSync(r.send, host.data(), host.size()));
      }
      CHILD_NCCL(ncclGroupStart());
      for (Rank& r : ranks) {
        CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
        CHILD_NCCL(ncclAlltoAll(r.send, r.recv, count, types[t], r.comm, r.stream));
      }
      CHILD_NCCL(ncclGroupEnd());
      for (Rank& r : ranks) {
        CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
        CHILD_CUDA(cudaStreamSynchronize(r.stream));
        std::vector<uint8_t> host(block * n + kGuard);
        CHILD_CUDA(cudaMemcpy(host.data(), r.recv, host.size(), cudaMemcpyDeviceToHost));
        for (int s = 0; s < n; s++) {
          size_t wrong = 0;
          size_t first = 0;
          size_t last = 0;
          for (size_t i = 0; i < block; i++) {
            if (host[s * block + i] != pattern(30 + t, s, r.rank, 0, i)) {
              if (wrong++ == 0) first = i;
              last = i;
            }
          }
          if (wrong != 0) {
            std::fprintf(stderr,
                         "AlltoAll type %d count %zu rank %d from %d: %zu bytes wrong, %zu to %zu (first 0x%02x)\n", t,
                         count, r.rank, s, wrong, first, last, host[s * block + first]);
            return 1;
          }
        }
        for (size_t i = 0; i < kGuard; i++) CHILD_EXPECT(host[block * n + i] == kPoison);
        if (release(r) != 0) return 1;
      }
    }
  }
  return 0;
}

TEST_P(P2p, AlltoAllEveryDatatype) {
  const int n = this->n();
  for (Mode mode : {Mode::kOneThread, Mode::kThreads}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [n](std::vector<Rank>& ranks) { return alltoAllEveryDatatype(ranks, n); }));
  }
}

// ncclGather and ncclScatter from every root, out of place and in place, 5000 floats per rank
// (one rank per process or thread).
int gatherAndScatterEveryRoot(std::vector<Rank>& ranks, int n) {
  Rank& r = ranks[0];
  const size_t count = 5000;
  const size_t block = count * 4;
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  char* big = nullptr;
  char* small = nullptr;
  CHILD_CUDA(cudaMalloc(&big, block * n));
  CHILD_CUDA(cudaMalloc(&small, block));
  std::vector<uint8_t> host(block * n);
  for (int root = 0; root < n; root++) {
    for (bool inPlace : {false, true}) {
      // Gather: every rank's block r = pattern(r, root).
      for (size_t i = 0; i < block; i++) host[i] = pattern(root, r.rank, root, 1, i);
      CHILD_CUDA(gputest::poisonSync(big, kPoison, block * n));
      char* mine = inPlace && r.rank == root ? big + block * root : small;
      CHILD_CUDA(gputest::uploadSync(mine, host.data(), block));
      CHILD_NCCL(ncclGather(mine, big, count, ncclFloat32, root, r.comm, r.stream));
      CHILD_CUDA(cudaStreamSynchronize(r.stream));
      if (r.rank == root) {
        CHILD_CUDA(cudaMemcpy(host.data(), big, block * n, cudaMemcpyDeviceToHost));
        for (int s = 0; s < n; s++) {
          for (size_t i = 0; i < block; i++) CHILD_EXPECT(host[s * block + i] == pattern(root, s, root, 1, i));
        }
      }
      // Scatter: block d of the root's input = pattern(root, d).
      if (r.rank == root) {
        for (int d = 0; d < n; d++) {
          for (size_t i = 0; i < block; i++) host[d * block + i] = pattern(root, root, d, 2, i);
        }
        CHILD_CUDA(gputest::uploadSync(big, host.data(), block * n));
      }
      char* out = inPlace && r.rank == root ? big + block * root : small;
      if (out == small) CHILD_CUDA(gputest::poisonSync(small, kPoison, block));
      CHILD_NCCL(ncclScatter(big, out, count, ncclFloat32, root, r.comm, r.stream));
      CHILD_CUDA(cudaStreamSynchronize(r.stream));
      CHILD_CUDA(cudaMemcpy(host.data(), out, block, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < block; i++) CHILD_EXPECT(host[i] == pattern(root, root, r.rank, 2, i));
    }
  }
  CHILD_CUDA(cudaFree(big));
  CHILD_CUDA(cudaFree(small));
  return 0;
}

TEST_P(P2p, GatherAndScatterEveryRoot) {
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kThreads}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [n](std::vector<Rank>& ranks) { return gatherAndScatterEveryRoot(ranks, n); }));
  }
}

// AlltoAll, Gather and Scatter across emulated hosts: their blocks between hosts go over the
// network.
TEST_P(P2pAcrossHosts, AlltoAllGatherAndScatter) {
  const int n = this->n();
  acrossEmulatedHosts([n](std::vector<Rank>& ranks) {
    return alltoAllEveryDatatype(ranks, n) != 0 ? 1 : gatherAndScatterEveryRoot(ranks, n);
  });
}

INSTANTIATE_TEST_SUITE_P(Gpus, P2p, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });
INSTANTIATE_TEST_SUITE_P(Ranks, P2pAcrossHosts, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

}  // namespace
