// Point-to-point on real GPUs: ncclSend/ncclRecv patterns (ring shift, all pairs with random sizes
// including 0 and self, many messages to one peer in one group, groups too large for one kernel,
// 10,000 small exchanges, ungrouped pairs in both orders), balanced operations, ncclAlltoAll with
// every datatype, ncclGather and ncclScatter from every root in and out of place, the SHM
// transport, and the argument errors. Ranks run as processes (one GPU each) and as one thread
// driving every GPU inside groups.
//
// Data: byte i of message k from src to dst is pattern(seed, src, dst, k, i), which every rank can
// compute, so a receiver checks every byte it got; receive slots are poisoned and separated by
// poisoned guards, which must survive.
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

namespace {

constexpr unsigned kWatchdogSeconds = 240;
constexpr unsigned char kPoison = 0xAB;
constexpr size_t kGuard = 64;

uint8_t pattern(uint64_t seed, int src, int dst, int k, size_t i) {
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

Layout layout(const Pattern& p, int rank, bool sends) {
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

int prepare(Rank& r, const Pattern& p, uint64_t seed) {
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

int enqueue(Rank& r, const Pattern& p) {
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

int verify(Rank& r, const Pattern& p, uint64_t seed) {
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

int release(Rank& r) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaFree(r.send));
  CHILD_CUDA(cudaFree(r.recv));
  return 0;
}

using gputest::Mode;
using gputest::modeName;
using Body = gputest::RanksBody<Rank>;

int withRanks(int nranks, Mode mode, const Body& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(nranks, mode, kWatchdogSeconds, body, ranksPerHost);
}

// One exchange of the pattern, every local rank's operations in one group.
int exchange(std::vector<Rank>& ranks, const Pattern& p, uint64_t seed) {
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
  }
  int n() const { return GetParam(); }
};

Pattern ringShift(int n, size_t bytes) {
  return Pattern{n, [n](int s, int d) { return d == (s + 1) % n ? 1 : 0; }, [bytes](int, int, int) { return bytes; }};
}

TEST_P(P2p, RingShiftSizes) {
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread, Mode::kThreads}) {
    SCOPED_TRACE(modeName(mode));
    const int n = this->n();
    EXPECT_EQ(0, withRanks(n, mode, [n](std::vector<Rank>& ranks) {
                uint64_t seed = 1;
                for (size_t bytes : {size_t{1}, size_t{13}, size_t{4099}, size_t{(1 << 20) + 5}, size_t{48 << 20}}) {
                  if (exchange(ranks, ringShift(n, bytes), seed++) != 0) return 1;
                }
                return 0;
              }));
  }
}

// Every ordered pair, self included, with a random size (0 included) and 1-3 messages, slots
// misaligned by 3 bytes.
TEST_P(P2p, AllPairsRandomSizesWithSelf) {
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kThreads}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [n](std::vector<Rank>& ranks) {
                for (uint64_t seed = 10; seed < 13; seed++) {
                  Pattern p{n, [seed](int s, int d) { return 1 + pattern(seed, s, d, 99, 0) % 3; },
                            [seed](int s, int d, int k) -> size_t {
                              uint8_t r = pattern(seed, s, d, k, 7);
                              return r % 5 == 0 ? 0 : (static_cast<size_t>(r) * 7919u) % (3 << 20);
                            },
                            3};
                  if (exchange(ranks, p, seed) != 0) return 1;
                }
                return 0;
              }));
  }
}

// 200 messages to the next rank in one group: they match in issue order.
TEST_P(P2p, ManyMessagesToOnePeerInOneGroup) {
  const int n = this->n();
  EXPECT_EQ(0, withRanks(n, Mode::kOneThread, [n](std::vector<Rank>& ranks) {
              Pattern p{n, [n](int s, int d) { return d == (s + 1) % n ? 200 : 0; },
                        [](int, int, int k) { return static_cast<size_t>(1 + 37 * k); }};
              return exchange(ranks, p, 77);
            }));
}

// Groups too large for one kernel's work list (896 segments) run in rounds of a few operations per
// queue. Every ordered pair exchanges 1,200 messages of 0-100 KiB (several channels each from 32
// KiB), the first two of each queue balanced (2 MiB, threshold lowered to 1 MiB): balanced
// operations in the first round, matching across rounds. Then, on two ranks, rank 0 sends 700
// messages to rank 1 and copies 300 to itself (rounds, its self copies apart) while rank 1 receives
// the 700 in one kernel: a rank in rounds against a rank that is not.
TEST_P(P2p, GroupsTooLargeForOneKernelRunInRounds) {
  colltest::ScopedSetenv balance("BRAID_P2P_BALANCE_BYTES", "1048576");
  const int n = this->n();
  const Pattern everyPair{n, [](int s, int d) { return s != d ? 1200 : 0; },
                          [](int s, int d, int k) -> size_t {
                            if (k < 2) return (size_t{2} << 20) + 4096 * static_cast<size_t>(k) + 3;
                            const uint8_t r = pattern(3, s, d, k, 1);
                            return r % 7 == 0 ? 0 : static_cast<size_t>(r) * 401u;
                          }};
  const Pattern mixed{2, [](int s, int d) { return s == 0 ? (d == 1 ? 700 : 300) : 0; },
                      [](int s, int d, int k) { return static_cast<size_t>(1 + (k * 131 + s + d) % 4000); }};
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) {
                if (exchange(ranks, everyPair, 21) != 0) return 1;
                return n == 2 ? exchange(ranks, mixed, 22) : 0;
              }));
  }
}

// 10,000 exchanges of a 16-byte message around the ring, each its own group, checked at the end.
TEST_P(P2p, TenThousandSmallRingExchanges) {
  const int n = this->n();
  EXPECT_EQ(
      0, withRanks(n, Mode::kProcesses, [n](std::vector<Rank>& ranks) {
        Rank& r = ranks[0];
        constexpr int kIters = 10000;
        constexpr size_t kMsg = 16;
        Pattern p{n, [n](int s, int d) { return d == (s + 1) % n ? kIters : 0; }, [](int, int, int) { return kMsg; }};
        if (prepare(r, p, 5) != 0) return 1;
        int next = (r.rank + 1) % n;
        int prev = (r.rank + n - 1) % n;
        for (int k = 0; k < kIters; k++) {
          CHILD_NCCL(ncclGroupStart());
          CHILD_NCCL(ncclSend(r.send + r.sendLayout.offset[next][k], kMsg, ncclInt8, next, r.comm, r.stream));
          CHILD_NCCL(ncclRecv(r.recv + r.recvLayout.offset[prev][k], kMsg, ncclInt8, prev, r.comm, r.stream));
          CHILD_NCCL(ncclGroupEnd());
        }
        int rc = verify(r, p, 5);
        return rc | release(r);
      }));
}

// Outside groups: rank 0 sends then receives, rank 1 receives then sends, and the reverse roles.
TEST_P(P2p, UngroupedPairsInBothOrders) {
  for (Mode mode : {Mode::kProcesses, Mode::kThreads}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(2, mode, [](std::vector<Rank>& ranks) {
                Rank& r = ranks[0];
                Pattern p{2, [](int s, int d) { return s != d ? 2 : 0; },
                          [](int, int, int k) { return k == 0 ? size_t{8 << 20} : size_t{1000}; }};
                if (prepare(r, p, 9) != 0) return 1;
                int peer = 1 - r.rank;
                for (int k = 0; k < 2; k++) {
                  bool sendFirst = (r.rank == 0) == (k == 0);
                  char* s = r.send + r.sendLayout.offset[peer][k];
                  char* d = r.recv + r.recvLayout.offset[peer][k];
                  size_t b = p.bytes(0, 1, k);
                  if (sendFirst) {
                    CHILD_NCCL(ncclSend(s, b, ncclInt8, peer, r.comm, r.stream));
                    CHILD_NCCL(ncclRecv(d, b, ncclInt8, peer, r.comm, r.stream));
                  } else {
                    CHILD_NCCL(ncclRecv(d, b, ncclInt8, peer, r.comm, r.stream));
                    CHILD_NCCL(ncclSend(s, b, ncclInt8, peer, r.comm, r.stream));
                  }
                }
                int rc = verify(r, p, 9);
                return rc | release(r);
              }));
  }
}

// Ranks in processes on emulated hosts (NCCL_HOSTID), so that ranks on different hosts talk over
// the socket network on loopback. Hosts may share GPUs (gputest::emulatedHostsFit): with fewer GPUs
// than ranks, each rank is its own host.
class P2pAcrossHosts : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::emulatedHostSizes(n()).empty()) GTEST_SKIP() << n() << " ranks across hosts do not fit this machine";
  }
  int n() const { return GetParam(); }

  // Runs body on hosts of n / 2 ranks, then fewer, down to 1 each: those that fit this machine.
  void acrossEmulatedHosts(const Body& body) {
    colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
    for (int perHost : gputest::emulatedHostSizes(n())) {
      SCOPED_TRACE(gputest::emulatedHostsName(n(), perHost));
      EXPECT_EQ(0, withRanks(n(), Mode::kProcesses, body, perHost));
    }
  }
};

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

// Replays a captured exchange of the pattern three times, receive buffers poisoned before each.
int replayedExchange(std::vector<Rank>& ranks, const Pattern& p, uint64_t seed) {
  for (Rank& r : ranks) {
    if (prepare(r, p, seed) != 0) return 1;
    CHILD_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
  }
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    if (enqueue(r, p) != 0) return 1;
  }
  CHILD_NCCL(ncclGroupEnd());
  std::vector<cudaGraphExec_t> execs;
  for (Rank& r : ranks) {
    cudaGraph_t graph = nullptr;
    CHILD_CUDA(cudaStreamEndCapture(r.stream, &graph));
    execs.emplace_back();
    CHILD_CUDA(cudaGraphInstantiate(&execs.back(), graph, 0));
    CHILD_CUDA(cudaGraphDestroy(graph));
  }
  int rc = 0;
  for (int replay = 0; replay < 3 && rc == 0; replay++) {
    for (size_t i = 0; i < ranks.size(); i++) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
      CHILD_CUDA(gputest::poisonSync(ranks[i].recv, kPoison, ranks[i].recvLayout.total));
      CHILD_CUDA(cudaGraphLaunch(execs[i], ranks[i].stream));
    }
    for (Rank& r : ranks) rc |= verify(r, p, seed);
  }
  for (cudaGraphExec_t exec : execs) CHILD_CUDA(cudaGraphExecDestroy(exec));
  for (Rank& r : ranks) rc |= release(r);
  return rc;
}

// Balanced operations (BRAID_P2P_BALANCE_BYTES lowered to 1 MiB): sizes that are not multiples of
// the chunk or of 16 bytes, on misaligned buffers; more balanced-size messages to one peer in one
// group than have counters (the others move in fixed parts) and a small one between them; every
// pair at once; repeated launches and replays of a captured exchange, each of which must find the
// operations' counters back at zero.
TEST_P(P2p, BalancedOperations) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's balancing";
  colltest::ScopedSetenv balance("BRAID_P2P_BALANCE_BYTES", "1048576");
  const int n = this->n();
  static constexpr size_t kSizes[] = {1 << 20, (3 << 20) + 5, (17 << 20) + 4093, 100, (2 << 20) + 16, (5 << 20) + 1};
  const Pattern several{n, [n](int s, int d) { return d == (s + 1) % n ? 6 : 0; },
                        [](int, int, int k) { return kSizes[k]; }, 3};
  const Pattern everyPair{n, [](int s, int d) { return s != d ? 1 : 0; },
                          [](int s, int d, int) { return size_t{(2 << 20) + 4099 * static_cast<size_t>(s + 1)} + d; }};
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) {
                for (uint64_t seed = 40; seed < 43; seed++) {
                  if (exchange(ranks, several, seed) != 0) return 1;
                }
                if (exchange(ranks, everyPair, 50) != 0) return 1;
                return mode == Mode::kProcesses ? replayedExchange(ranks, several, 51) : 0;
              }));
  }
}

TEST_P(P2p, RingShiftOverShm) {
  colltest::ScopedSetenv noP2p("NCCL_P2P_DISABLE", "1");
  const int n = this->n();
  EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [n](std::vector<Rank>& ranks) {
              return exchange(ranks, ringShift(n, 3 << 20), 21) | exchange(ranks, ringShift(n, 100), 22);
            }));
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

// Whether every byte of a rank's receive buffer is still poison (nothing was written to it).
int untouched(Rank& r) {
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  std::vector<uint8_t> host(r.recvLayout.total);
  CHILD_CUDA(cudaMemcpy(host.data(), r.recv, host.size(), cudaMemcpyDeviceToHost));
  for (uint8_t b : host) CHILD_EXPECT(b == kPoison);
  return 0;
}

// The group's estimate in microseconds, from the pattern's operations and, when allReduceBytes > 0,
// an AllReduce of that many bytes in the same group (recv as its output: it must stay poisoned).
int simulate(std::vector<Rank>& ranks, const Pattern& p, size_t allReduceBytes, float* us) {
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    if (enqueue(r, p) != 0) return 1;
    if (allReduceBytes > 0) {
      CHILD_NCCL(ncclAllReduce(r.send, r.recv, allReduceBytes / 4, ncclFloat32, ncclSum, r.comm, r.stream));
    }
  }
  CHILD_NCCL(ncclGroupSimulateEnd(&sim));
  for (Rank& r : ranks) CHILD_EXPECT(untouched(r) == 0);
  *us = sim.estimatedTime;
  return 0;
}

// ncclGroupSimulateEnd estimates a group from the cost model and launches none of it: receive
// buffers stay poisoned, larger groups cost more, and a real exchange works afterwards.
TEST_P(P2p, GroupSimulateEndEstimatesAndLaunchesNothing) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's cost model";
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [n](std::vector<Rank>& ranks) {
                Pattern big = ringShift(n, 64 << 20);
                for (Rank& r : ranks) {
                  if (prepare(r, big, 31) != 0) return 1;
                }
                float small = 0, large = 0, withColl = 0;
                if (simulate(ranks, ringShift(n, 64), 0, &small) != 0) return 1;
                if (simulate(ranks, big, 0, &large) != 0) return 1;
                if (simulate(ranks, big, 16 << 20, &withColl) != 0) return 1;
                std::fprintf(stderr, "estimates: 64 B %.1f us, 64 MiB %.1f us, with a 16 MiB AllReduce %.1f us\n",
                             small, large, withColl);
                CHILD_EXPECT(small > 1.0f && small < 50.0f);
                CHILD_EXPECT(large > 100.0f && large < 2000.0f);  // 64 MiB at 30-600 GB/s
                CHILD_EXPECT(withColl > large + 20.0f);
                int rc = 0;
                for (Rank& r : ranks) rc |= release(r);
                return rc | exchange(ranks, ringShift(n, 1 << 20), 32);
              }));
  }
}

// Under BRAID_P2P_CHECK_COUNTS=1 matching sends and receives (empty ones included) pass, and a
// receive whose count differs from its sender's is refused with a WARN naming both ranks and both
// counts, its buffer untouched; the sender's pending send ends with ncclCommAbort.
TEST_P(P2p, CountMismatchIsRefusedUnderTheCheck) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's check";
  if (GetParam() != 2) GTEST_SKIP() << "one pair is enough";
  colltest::ScopedSetenv check("BRAID_P2P_CHECK_COUNTS", "1");
  EXPECT_EQ(0, gputest::runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              alarm(kWatchdogSeconds);
              std::vector<Rank> ranks(1);
              Rank& r = ranks[0];
              r.rank = rank;
              CHILD_CUDA(cudaSetDevice(rank));
              CHILD_NCCL(ncclCommInitRank(&r.comm, 2, id, rank));
              CHILD_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
              if (exchange(ranks, ringShift(2, 4096), 41) != 0) return 1;
              int peer = 1 - rank;
              char* buf = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, 256));
              CHILD_CUDA(gputest::poisonSync(buf, kPoison, 256));
              CHILD_NCCL(ncclGroupStart());
              CHILD_NCCL(ncclSend(buf, 0, ncclInt8, peer, r.comm, r.stream));
              CHILD_NCCL(ncclRecv(buf, 0, ncclInt8, peer, r.comm, r.stream));
              CHILD_NCCL(ncclGroupEnd());
              if (rank == 0) {
                CHILD_NCCL(ncclSend(buf, 100, ncclInt8, peer, r.comm, r.stream));
              } else {
                CHILD_EXPECT(ncclRecv(buf, 16, ncclFloat32, peer, r.comm, r.stream) == ncclInvalidUsage);
                std::string warn = ncclGetLastError(r.comm);
                CHILD_EXPECT(warn.find("rank 1: ncclRecv #2 from rank 0 expects count 16 of datatype 7 (64 bytes)") !=
                             std::string::npos);
                CHILD_EXPECT(warn.find("rank 0 sends count 100") != std::string::npos);
                std::vector<uint8_t> host(256);
                CHILD_CUDA(cudaMemcpy(host.data(), buf, host.size(), cudaMemcpyDeviceToHost));
                for (uint8_t b : host) CHILD_EXPECT(b == kPoison);
              }
              CHILD_NCCL(ncclCommAbort(r.comm));
              CHILD_CUDA(cudaStreamSynchronize(r.stream));
              CHILD_CUDA(cudaFree(buf));
              return 0;
            }));
}

TEST_P(P2p, BadArgumentsAreRefused) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's checks";
  const int n = this->n();
  EXPECT_EQ(
      0, withRanks(n, Mode::kProcesses, [n](std::vector<Rank>& ranks) {
        Rank& r = ranks[0];
        char* buf = nullptr;
        CHILD_CUDA(cudaMalloc(&buf, 4096));
        CHILD_EXPECT(ncclSend(buf, 4, ncclInt8, n, r.comm, r.stream) == ncclInvalidArgument);
        CHILD_EXPECT(ncclRecv(buf, 4, ncclInt8, -1, r.comm, r.stream) == ncclInvalidArgument);
        CHILD_EXPECT(ncclSend(nullptr, 4, ncclInt8, 0, r.comm, r.stream) == ncclInvalidArgument);
        CHILD_EXPECT(ncclRecv(buf, 4, static_cast<ncclDataType_t>(99), 0, r.comm, r.stream) == ncclInvalidArgument);
        CHILD_EXPECT(ncclGather(buf, buf, 4, ncclInt8, n, r.comm, r.stream) == ncclInvalidArgument);
        // A self send without its self receive in the group.
        CHILD_NCCL(ncclGroupStart());
        CHILD_NCCL(ncclSend(buf, 4, ncclInt8, r.rank, r.comm, r.stream));
        CHILD_EXPECT(ncclGroupEnd() == ncclInvalidUsage);
        // Count 0 with a null buffer is a no-op, and the communicator still works.
        CHILD_NCCL(ncclSend(nullptr, 0, ncclInt8, (r.rank + 1) % n, r.comm, r.stream));
        CHILD_CUDA(cudaStreamSynchronize(r.stream));
        CHILD_CUDA(cudaFree(buf));
        return exchange(ranks, ringShift(n, 4096), 3);
      }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, P2p, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });
INSTANTIATE_TEST_SUITE_P(Ranks, P2pAcrossHosts, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

}  // namespace
