// Shared by the symmetric window tests (window_test.cc: registration, pointers, misuse, hosts;
// window_rma_test.cc: put/signal/wait). Ranks run in the modes of rank_modes.h; every rank's
// buffers come from ncclMemAlloc, and its data is a hash of (seed, rank, index), so that any rank
// can compute what any other rank holds.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device/host.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"

namespace wintest {

using gputest::Mode;

constexpr unsigned kWatchdogSeconds = 300;
constexpr uint8_t kPoison = 0xAB;

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};
using Body = gputest::RanksBody<Rank>;

inline int withRanks(int nranks, Mode mode, const Body& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(nranks, mode, kWatchdogSeconds, body, ranksPerHost);
}

inline uint8_t byteOf(uint64_t seed, int rank, size_t i) {
  return static_cast<uint8_t>(colltest::inputHash(seed, rank, i) >> 17);
}

// The bytes rank `rank` holds for `seed`: [first, first + n).
inline std::vector<uint8_t> pattern(uint64_t seed, int rank, size_t first, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = byteOf(seed, rank, first + i);
  return v;
}

// Compares `n` device bytes at `ptr` (any address the current device can read: its memory, or a
// peer's through a window's flat range) with `expected`; prints the first difference.
inline int expectBytes(const void* ptr, const std::vector<uint8_t>& expected, const char* what, int rank) {
  std::vector<uint8_t> got(expected.size());
  CHILD_CUDA(cudaMemcpy(got.data(), ptr, got.size(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < got.size(); i++) {
    if (got[i] != expected[i]) {
      std::fprintf(stderr, "rank %d: %s: byte %zu of %zu is 0x%02x, expected 0x%02x\n", rank, what, i, got.size(),
                   got[i], expected[i]);
      return 1;
    }
  }
  return 0;
}

// Every rank's stream has finished what came before and every rank got here: an AllReduce of one
// int on each rank (grouped: one thread may drive them all), then each stream synchronized.
inline int barrier(std::vector<Rank>& ranks) {
  std::vector<int*> tmp(ranks.size());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaMallocAsync(&tmp[i], sizeof(int), ranks[i].stream));
  }
  CHILD_NCCL(ncclGroupStart());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_NCCL(ncclAllReduce(tmp[i], tmp[i], 1, ncclInt32, ncclSum, ranks[i].comm, ranks[i].stream));
  }
  CHILD_NCCL(ncclGroupEnd());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaFreeAsync(tmp[i], ranks[i].stream));
    CHILD_CUDA(cudaStreamSynchronize(ranks[i].stream));
  }
  return 0;
}

// Registers one window per rank (all in one group: one thread may drive every rank).
inline int registerAll(std::vector<Rank>& ranks, const std::vector<void*>& buffs, const std::vector<size_t>& sizes,
                       int flags, std::vector<ncclWindow_t>* wins) {
  wins->assign(ranks.size(), nullptr);
  CHILD_NCCL(ncclGroupStart());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_NCCL(ncclCommWindowRegister(ranks[i].comm, buffs[i], sizes[i], &(*wins)[i], flags));
  }
  CHILD_NCCL(ncclGroupEnd());
  for (ncclWindow_t w : *wins) CHILD_EXPECT(w != nullptr);
  return 0;
}

inline int deregisterAll(std::vector<Rank>& ranks, const std::vector<ncclWindow_t>& wins) {
  for (size_t i = 0; i < ranks.size(); i++) CHILD_NCCL(ncclCommWindowDeregister(ranks[i].comm, wins[i]));
  return 0;
}

// (NCCL_COMM_PROPERTIES_INITIALIZER names only the header fields, which -Wextra warns about.)
inline ncclCommProperties_t properties(ncclComm_t comm) {
  ncclCommProperties_t p;
  std::memset(&p, 0, sizeof(p));
  p.size = sizeof(p);
  p.magic = NCCL_API_MAGIC;
  p.version = NCCL_VERSION_CODE;
  if (ncclCommQueryProperties(comm, &p) != ncclSuccess) p.nRanks = -1;
  return p;
}

// One rank's communicator of `config` and stream around body (threads and processes).
inline int oneRankWithConfig(int nranks, int rank, const ncclUniqueId& id, const ncclConfig_t& config,
                             const Body& body) {
  std::vector<Rank> ranks(1);
  ranks[0].rank = rank;
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(rank)));
  ncclConfig_t c = config;
  CHILD_NCCL(ncclCommInitRankConfig(&ranks[0].comm, nranks, id, rank, &c));
  CHILD_CUDA(cudaStreamCreateWithFlags(&ranks[0].stream, cudaStreamNonBlocking));
  int rc = body(ranks);
  CHILD_NCCL(ncclCommDestroy(ranks[0].comm));
  return rc;
}

// withRanks with communicators of `config` (GPU r for rank r; nranks <= GPUs).
inline int withConfig(int nranks, Mode mode, const ncclConfig_t& config, const Body& body) {
  auto one = [&](int rank, const ncclUniqueId& id) { return oneRankWithConfig(nranks, rank, id, config, body); };
  if (mode == Mode::kProcesses) {
    return gputest::runRanksInProcesses(nranks, [&](int rank, const ncclUniqueId& id) {
      alarm(kWatchdogSeconds);
      return one(rank, id);
    });
  }
  if (mode == Mode::kThreads) {
    return gputest::runInChild([&] {
      alarm(kWatchdogSeconds);
      return gputest::runRanksInThreads(nranks, one);
    });
  }
  return gputest::runInChild([&] {  // one thread drives every rank, inside a group
    alarm(kWatchdogSeconds);
    ncclUniqueId id;
    CHILD_NCCL(ncclGetUniqueId(&id));
    std::vector<Rank> ranks(nranks);
    CHILD_NCCL(ncclGroupStart());
    for (int r = 0; r < nranks; r++) {
      ranks[r].rank = r;
      CHILD_CUDA(cudaSetDevice(r));
      ncclConfig_t c = config;
      CHILD_NCCL(ncclCommInitRankConfig(&ranks[r].comm, nranks, id, r, &c));
    }
    CHILD_NCCL(ncclGroupEnd());
    for (int r = 0; r < nranks; r++) {
      CHILD_CUDA(cudaSetDevice(r));
      CHILD_CUDA(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
    }
    int rc = body(ranks);
    for (Rank& r : ranks) CHILD_NCCL(ncclCommDestroy(r.comm));
    return rc;
  });
}

inline const char* modeTestName(Mode m) {
  return m == Mode::kThreads ? "Threads" : m == Mode::kProcesses ? "Processes" : "OneThread";
}

}  // namespace wintest
