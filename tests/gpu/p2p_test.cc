// Point-to-point on real GPUs (p2p_harness.h): ncclSend/ncclRecv patterns (ring shift, all pairs
// with random sizes including 0 and self, many messages to one peer in one group, groups too large
// for one kernel, 10,000 small exchanges, ungrouped pairs in both orders), a captured exchange
// replayed, balanced operations, the SHM transport, ncclGroupSimulateEnd, the count check, and the
// argument errors. Ranks run as processes (one GPU each) and as one thread driving every GPU
// inside groups.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "p2p_harness.h"

namespace {

using namespace p2ptest;  // NOLINT(google-build-using-namespace): this family's harness

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

}  // namespace
