// What the point-to-point tests share: message patterns every rank can compute (byte i of message
// k from src to dst is pattern(seed, src, dst, k, i)), receive slots poisoned and separated by
// poisoned guards, ranks in every mode, one exchange of a pattern, and the fixtures.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"
#include "util/dtype.h"

namespace p2ptest {

inline constexpr unsigned kWatchdogSeconds = 240;
inline constexpr unsigned char kPoison = 0xAB;
inline constexpr size_t kGuard = 64;

inline uint8_t pattern(uint64_t seed, int src, int dst, int k, size_t i) {
  uint64_t x = seed ^ (static_cast<uint64_t>(src) << 48) ^ (static_cast<uint64_t>(dst) << 40) ^
               (static_cast<uint64_t>(k) << 32) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x);
}

// Messages of one exchange: bytes(src, dst, k) for k < count(src, dst); 0 bytes is allowed.
struct Pattern {
  int nranks;
  std::function<int(int src, int dst)> count;
  std::function<size_t(int src, int dst, int k)> bytes;
  size_t misalign = 0;  // added to every slot offset (0: 16-byte aligned slots)
};

// Offsets of the slots on one side of `rank`: sends (rank -> dst) or receives (src -> rank).
struct Layout {
  std::vector<std::vector<size_t>> offset;  // [peer][k]
  size_t total = 0;
};

inline Layout layout(const Pattern& p, int rank, bool sends) {
  Layout l;
  l.offset.resize(p.nranks);
  for (int peer = 0; peer < p.nranks; peer++) {
    int src = sends ? rank : peer;
    int dst = sends ? peer : rank;
    for (int k = 0; k < p.count(src, dst); k++) {
      l.total = (l.total + 15) / 16 * 16 + p.misalign;
      l.offset[peer].push_back(l.total);
      l.total += p.bytes(src, dst, k) + kGuard;
    }
  }
  l.total += kGuard;
  return l;
}

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  char* send = nullptr;
  char* recv = nullptr;
  Layout sendLayout;
  Layout recvLayout;
};

inline int prepare(Rank& r, const Pattern& p, uint64_t seed) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  r.sendLayout = layout(p, r.rank, true);
  r.recvLayout = layout(p, r.rank, false);
  CHILD_CUDA(cudaMalloc(&r.send, r.sendLayout.total));
  CHILD_CUDA(cudaMalloc(&r.recv, r.recvLayout.total));
  std::vector<uint8_t> host(r.sendLayout.total, 0);
  for (int dst = 0; dst < p.nranks; dst++) {
    for (int k = 0; k < p.count(r.rank, dst); k++) {
      size_t o = r.sendLayout.offset[dst][k];
      for (size_t i = 0; i < p.bytes(r.rank, dst, k); i++) host[o + i] = pattern(seed, r.rank, dst, k, i);
    }
  }
  CHILD_CUDA(gputest::uploadSync(r.send, host.data(), host.size()));
  CHILD_CUDA(gputest::poisonSync(r.recv, kPoison, r.recvLayout.total));
  return 0;
}

inline int enqueue(Rank& r, const Pattern& p) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  for (int peer = 0; peer < p.nranks; peer++) {
    for (int k = 0; k < p.count(r.rank, peer); k++) {
      CHILD_NCCL(
          ncclSend(r.send + r.sendLayout.offset[peer][k], p.bytes(r.rank, peer, k), ncclInt8, peer, r.comm, r.stream));
    }
    for (int k = 0; k < p.count(peer, r.rank); k++) {
      CHILD_NCCL(
          ncclRecv(r.recv + r.recvLayout.offset[peer][k], p.bytes(peer, r.rank, k), ncclInt8, peer, r.comm, r.stream));
    }
  }
  return 0;
}

inline int verify(Rank& r, const Pattern& p, uint64_t seed) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  std::vector<uint8_t> host(r.recvLayout.total);
  CHILD_CUDA(cudaMemcpy(host.data(), r.recv, host.size(), cudaMemcpyDeviceToHost));
  std::vector<bool> written(host.size(), false);
  size_t bad = 0;
  for (int src = 0; src < p.nranks; src++) {
    for (int k = 0; k < p.count(src, r.rank); k++) {
      size_t o = r.recvLayout.offset[src][k];
      for (size_t i = 0; i < p.bytes(src, r.rank, k); i++) {
        written[o + i] = true;
        uint8_t want = pattern(seed, src, r.rank, k, i);
        if (host[o + i] != want && bad++ < 8) {
          std::fprintf(stderr, "MISMATCH rank %d from %d message %d byte %zu: expected 0x%02x got 0x%02x\n", r.rank,
                       src, k, i, want, host[o + i]);
        }
      }
    }
  }
  for (size_t i = 0; i < host.size(); i++) {
    if (!written[i] && host[i] != kPoison && bad++ < 8) {
      std::fprintf(stderr, "GUARD rank %d: byte %zu outside every message was written (0x%02x)\n", r.rank, i, host[i]);
    }
  }
  return bad == 0 ? 0 : 1;
}

inline int release(Rank& r) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaFree(r.send));
  CHILD_CUDA(cudaFree(r.recv));
  return 0;
}

using gputest::Mode;
using gputest::modeName;
using Body = gputest::RanksBody<Rank>;

inline int withRanks(int nranks, Mode mode, const Body& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(nranks, mode, kWatchdogSeconds, body, ranksPerHost);
}

// One exchange of the pattern, every local rank's operations in one group.
inline int exchange(std::vector<Rank>& ranks, const Pattern& p, uint64_t seed) {
  for (Rank& r : ranks) {
    if (prepare(r, p, seed) != 0) return 1;
  }
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    if (enqueue(r, p) != 0) return 1;
  }
  CHILD_NCCL(ncclGroupEnd());
  int rc = 0;
  for (Rank& r : ranks) rc |= verify(r, p, seed);
  for (Rank& r : ranks) rc |= release(r);
  return rc;
}

class P2p : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < GetParam()) GTEST_SKIP() << "needs " << GetParam() << " GPUs";
    std::string tier;
    if (gputest::leftOutOfQuickTier(GetParam(), &tier)) GTEST_SKIP() << tier;
  }
  int n() const { return GetParam(); }
};

inline Pattern ringShift(int n, size_t bytes) {
  return Pattern{n, [n](int s, int d) { return d == (s + 1) % n ? 1 : 0; }, [bytes](int, int, int) { return bytes; }};
}

// Ranks in processes on emulated hosts (NCCL_HOSTID), so that ranks on different hosts talk over
// the socket network on loopback. Hosts may share GPUs (gputest::emulatedHostsFit): with fewer GPUs
// than ranks, each rank is its own host.
class P2pAcrossHosts : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::emulatedHostSizes(n()).empty()) GTEST_SKIP() << n() << " ranks across hosts do not fit this machine";
    std::string tier;
    if (gputest::leftOutOfQuickTier(n(), &tier)) GTEST_SKIP() << tier;
  }
  int n() const { return GetParam(); }

  // Runs body on hosts of n / 2 ranks, then fewer, down to 1 each: those that fit this machine.
  void acrossEmulatedHosts(const Body& body) {
    colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
    for (int perHost : gputest::tierHostSizes(n())) {
      SCOPED_TRACE(gputest::emulatedHostsName(n(), perHost));
      EXPECT_EQ(0, withRanks(n(), Mode::kProcesses, body, perHost));
    }
  }
};

}  // namespace p2ptest
