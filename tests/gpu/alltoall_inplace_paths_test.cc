// In-place ncclAlltoAll on the other paths (alltoall_inplace_harness.h): over SHM, grouped with
// other AlltoAlls (five in one group: staged in one batch), on registered buffers (zero-copy
// receives), unstaged where the blocks fit the FIFOs, ncclGroupSimulateEnd's count of the staging;
// in-place ncclGather and ncclScatter with the buffer conventions of nccl-tests; across emulated
// hosts (the network path).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "alltoall_inplace_harness.h"

namespace {

using namespace a2a_inplace;  // NOLINT(google-build-using-namespace): this family's harness

// Over the SHM transport (P2P disabled): staging does not depend on the transport.
TEST_P(AlltoAllInPlace, OverShm) {
  SKIP_AGAINST_REFERENCE();
  colltest::ScopedSetenv noP2p("NCCL_P2P_DISABLE", "1");
  const int n = this->n();
  EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              return runCases(ranks, n, {{ncclInt8, 1, 0}, {ncclFloat32, 300001, 4}, {ncclUint64, 1001, 0}}, 250);
            }));
}

// One group holding an in-place AlltoAll, an out-of-place one and another in-place one of a
// different type; then five in place (queues of five operations, more than a round of operations
// holds: staged in one batch).
TEST_P(AlltoAllInPlace, GroupedWithOtherAlltoAlls) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) {
                for (int groupSize : {3, 5}) {
                  std::vector<Case> cases;
                  for (int k = 0; k < groupSize; k++) {
                    cases.push_back({kTypes[(k * 5) % 12], static_cast<size_t>(1000 + 40000 * k) | 1, 0});
                  }
                  std::vector<std::vector<Buffers>> bufs(cases.size(), std::vector<Buffers>(ranks.size()));
                  for (size_t k = 0; k < cases.size(); k++) {
                    const bool inPlace = groupSize == 5 || k != 1;
                    for (size_t i = 0; i < ranks.size(); i++) {
                      if (allocBuffers(ranks[i], n, cases[k], inPlace, &bufs[k][i]) != 0) return 1;
                      if (fillInput(ranks[i], n, cases[k], bufs[k][i], 300 + k) != 0) return 1;
                    }
                  }
                  CHILD_NCCL(ncclGroupStart());
                  for (size_t k = 0; k < cases.size(); k++) {
                    if (issue(ranks, cases[k], bufs[k]) != 0) return 1;
                  }
                  CHILD_NCCL(ncclGroupEnd());
                  int rc = 0;
                  for (size_t k = 0; k < cases.size(); k++) {
                    for (size_t i = 0; i < ranks.size(); i++) {
                      rc |= checkOutput(ranks[i], n, cases[k], bufs[k][i], 300 + k);
                      rc |= freeBuffers(ranks[i], &bufs[k][i]);
                    }
                  }
                  if (rc != 0) return rc;
                }
                return 0;
              }));
  }
}

// A buffer from ncclMemAlloc registered with ncclCommRegister, blocks above the eager zero-copy
// size (set to 16 MiB): peers write their blocks straight into it, and the default budget (64 MiB)
// makes eight ranks move their peers in several kernels.
TEST_P(AlltoAllInPlace, RegisteredBuffer) {
  SKIP_AGAINST_REFERENCE();
  colltest::ScopedSetenv eagerZeroCopy("BRAID_ZERO_COPY_EAGER_BYTES", "16777216");
  const int n = this->n();
  EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              const Case c{ncclInt32, (4 << 20) + 3, 0};
              const size_t bytes = static_cast<size_t>(n) * blockBytes(c) + kGuard;
              Buffers b;
              CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&b.base), bytes));
              b.buff = b.base;
              void* handle = nullptr;
              CHILD_NCCL(ncclCommRegister(r.comm, b.base, bytes, &handle));
              int rc = 0;
              for (uint64_t seed = 400; seed < 403 && rc == 0; seed++) {
                if (fillInput(r, n, c, b, seed) != 0) return 1;
                CHILD_NCCL(ncclAlltoAll(b.buff, b.buff, c.count, c.type, r.comm, r.stream));
                rc |= checkOutput(r, n, c, b, seed);
              }
              CHILD_NCCL(ncclCommDeregister(r.comm, handle));
              CHILD_CUDA(cudaStreamSynchronize(r.stream));
              CHILD_NCCL(ncclMemFree(b.base));
              return rc;
            }));
}

// Whether the GPUs of every pair of the n ranks reach each other by P2P. CUDA calls: in a rank's
// process only.
bool allPairsP2p(int n) {
  const char* disable = std::getenv("NCCL_P2P_DISABLE");
  if (disable != nullptr && std::atoi(disable) != 0) return false;
  for (int a = 0; a < n; a++) {
    for (int b = 0; b < n; b++) {
      int can = 1;
      if (a == b) continue;
      if (cudaDeviceCanAccessPeer(&can, gputest::deviceOfRank(a), gputest::deviceOfRank(b)) != cudaSuccess || !can) {
        return false;
      }
    }
  }
  return true;
}

// Blocks that fit their peers' channel FIFOs move unstaged by default (each receive waits for its
// channel's send), staged with BRAID_P2P_INPLACE_GUARD=0; each operation's INFO line says which, and
// the results are exact either way.
TEST_P(AlltoAllInPlace, UnstagedWhereBlocksFitTheFifos) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  colltest::ScopedSetenv debug("NCCL_DEBUG", "INFO");
  colltest::ScopedSetenv subsys("NCCL_DEBUG_SUBSYS", "COLL");
  colltest::ScopedSetenv file("NCCL_DEBUG_FILE", regtest::logPattern().c_str());
  for (const bool guarded : {true, false}) {
    SCOPED_TRACE(guarded ? "guarded" : "staged");
    colltest::ScopedSetenv setting("BRAID_P2P_INPLACE_GUARD", guarded ? "1" : "0");
    EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) {
                if (runCases(ranks, n, {{ncclInt32, (1 << 18) + 3, 0}, {ncclUint8, 5, 1}}, 7) != 0) return 1;
                const bool expectGuarded = guarded && allPairsP2p(n);  // only P2P pairs go guarded
                CHILD_EXPECT(regtest::logHas("(in place: guarded)", expectGuarded) == expectGuarded);
                CHILD_EXPECT(regtest::logHas("(in place: staged)", !expectGuarded) == !expectGuarded);
                return 0;
              }));
  }
}

// ncclGroupSimulateEnd counts the staging copy: a staged in-place AlltoAll is estimated above the
// same AlltoAll out of place, and nothing runs (the buffer keeps its input).
TEST_P(AlltoAllInPlace, SimulateCountsTheStaging) {
  SKIP_AGAINST_REFERENCE();
  colltest::ScopedSetenv stageAll("BRAID_P2P_INPLACE_GUARD", "0");
  const int n = this->n();
  EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              const Case c{ncclFloat32, (1 << 18) + 1, 0};
              Buffers b;
              if (allocBuffers(r, n, c, false, &b) != 0 || fillInput(r, n, c, b, 500) != 0) return 1;
              float us[2] = {0, 0};
              for (int inPlace = 0; inPlace < 2; inPlace++) {
                ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
                CHILD_NCCL(ncclGroupStart());
                CHILD_NCCL(ncclAlltoAll(inPlace ? b.buff : b.send, b.buff, c.count, c.type, r.comm, r.stream));
                CHILD_NCCL(ncclGroupSimulateEnd(&sim));
                us[inPlace] = sim.estimatedTime;
              }
              std::fprintf(stderr, "estimates: out of place %.1f us, in place %.1f us\n", us[0], us[1]);
              CHILD_EXPECT(us[0] > 1.0f);
              CHILD_EXPECT(us[1] > us[0]);
              std::vector<uint8_t> host(static_cast<size_t>(n) * blockBytes(c));
              CHILD_CUDA(cudaStreamSynchronize(r.stream));
              CHILD_CUDA(cudaMemcpy(host.data(), b.buff, host.size(), cudaMemcpyDeviceToHost));
              for (uint8_t v : host) CHILD_EXPECT(v == kPoison);
              return freeBuffers(r, &b);
            }));
}

// ncclGroupSimulateEnd of an in-place AlltoAll whose blocks fit the FIFOs, on communicators that
// have made no point-to-point connection yet (a simulation makes none): the guarded choice is
// estimated from the channel count the connect would use, and nothing runs.
TEST_P(AlltoAllInPlace, SimulateGuardedBeforeAnyConnection) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              const Case c{ncclFloat32, 1024, 0};
              Buffers b;
              if (allocBuffers(r, n, c, false, &b) != 0 || fillInput(r, n, c, b, 700) != 0) return 1;
              ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
              CHILD_NCCL(ncclGroupStart());
              CHILD_NCCL(ncclAlltoAll(b.buff, b.buff, c.count, c.type, r.comm, r.stream));
              CHILD_NCCL(ncclGroupSimulateEnd(&sim));
              CHILD_EXPECT(sim.estimatedTime > 1.0f);
              std::vector<uint8_t> host(static_cast<size_t>(n) * blockBytes(c));
              CHILD_CUDA(cudaStreamSynchronize(r.stream));
              CHILD_CUDA(cudaMemcpy(host.data(), b.buff, host.size(), cudaMemcpyDeviceToHost));
              for (uint8_t v : host) CHILD_EXPECT(v == kPoison);
              return freeBuffers(r, &b);
            }));
}

// Gather and Scatter in place as nccl-tests calls them, on every rank: Gather(recvbuff + rank *
// count, recvbuff) and Scatter(sendbuff, sendbuff + rank * count), every datatype, from every root.
// Every rank's buffer starts as its whole input (seed): only the root's Gather and every rank's own
// Scatter block may change.
int gatherScatterOnce(std::vector<Rank>& ranks, int n, const Case& c, std::vector<Buffers>& bufs, int root,
                      uint64_t seed, bool gather) {
  const size_t block = blockBytes(c);
  for (size_t i = 0; i < ranks.size(); i++) {
    if (fillInput(ranks[i], n, c, bufs[i], seed) != 0) return 1;
  }
  CHILD_NCCL(ncclGroupStart());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    char* mine = bufs[i].buff + static_cast<size_t>(ranks[i].rank) * block;
    if (gather) {
      CHILD_NCCL(ncclGather(mine, bufs[i].buff, c.count, c.type, root, ranks[i].comm, ranks[i].stream));
    } else {
      CHILD_NCCL(ncclScatter(bufs[i].buff, mine, c.count, c.type, root, ranks[i].comm, ranks[i].stream));
    }
  }
  CHILD_NCCL(ncclGroupEnd());
  int rc = 0;
  for (size_t i = 0; i < ranks.size(); i++) {
    const int r = ranks[i].rank;
    const std::string what = std::string(gather ? "Gather" : "Scatter") + " from root " + std::to_string(root);
    rc |= checkBlocks(ranks[i], n, c, bufs[i], what.c_str(), [&](int p, size_t b) {
      const size_t at = static_cast<size_t>(p) * block + b;
      if (gather && r == root) return inputByte(seed, p, at);   // rank p's own block
      if (!gather && p == r) return inputByte(seed, root, at);  // the root's block r
      return inputByte(seed, r, at);                            // untouched
    });
  }
  return rc;
}

int gatherScatterInPlace(std::vector<Rank>& ranks, int n) {
  uint64_t seed = 600;
  for (ncclDataType_t t : kTypes) {
    for (size_t count : {size_t{1}, size_t{4099}, (size_t{1} << 20) / braid::dtypeSize(t) + 1}) {
      const Case c{t, count, 0};
      std::vector<Buffers> bufs(ranks.size());
      for (size_t i = 0; i < ranks.size(); i++) {
        if (allocBuffers(ranks[i], n, c, true, &bufs[i]) != 0) return 1;
      }
      // Every root for the small counts, the first and last for the large one.
      std::vector<int> roots;
      for (int root = 0; root < n; root++) {
        if (count <= 4099 || root == 0 || root == n - 1) roots.push_back(root);
      }
      int rc = 0;
      for (size_t k = 0; k < roots.size() && rc == 0; k++, seed += 2) {
        rc |= gatherScatterOnce(ranks, n, c, bufs, roots[k], seed, true);
        rc |= gatherScatterOnce(ranks, n, c, bufs, roots[k], seed + 1, false);
      }
      for (size_t i = 0; i < ranks.size(); i++) rc |= freeBuffers(ranks[i], &bufs[i]);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

TEST_P(AlltoAllInPlace, GatherAndScatterInPlaceEveryDatatype) {
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) { return gatherScatterInPlace(ranks, n); }));
  }
}

// Ranks on emulated hosts (NCCL_HOSTID): blocks between hosts go over the socket network.
class AlltoAllInPlaceAcrossHosts : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::emulatedHostSizes(n()).empty()) GTEST_SKIP() << n() << " ranks across hosts do not fit this machine";
    std::string tier;
    if (gputest::leftOutOfQuickTier(n(), &tier)) GTEST_SKIP() << tier;
  }
  int n() const { return GetParam(); }
  void acrossEmulatedHosts(const Body& body) {
    colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
    for (int perHost : gputest::tierHostSizes(n())) {
      SCOPED_TRACE(gputest::emulatedHostsName(n(), perHost));
      EXPECT_EQ(0, withRanks(n(), Mode::kProcesses, body, perHost));
    }
  }
};

TEST_P(AlltoAllInPlaceAcrossHosts, EveryDatatypeCapturedAndInBatches) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  acrossEmulatedHosts([n](std::vector<Rank>& ranks) {
    if (runCases(ranks, n, sweepCases(1 << 20), 700) != 0) return 1;
    if (runCaptured(ranks, n, {ncclFloat16, 50001, 2}, 720, 3) != 0) return 1;
    return gatherScatterInPlace(ranks, n);
  });
  colltest::ScopedSetenv budget("BRAID_P2P_STAGE_BYTES", "1048576");
  acrossEmulatedHosts([n](std::vector<Rank>& ranks) {
    return runCases(ranks, n, {{ncclInt32, 100001, 0}, {ncclUint8, (2 << 20) + 1, 1}}, 740);
  });
}

INSTANTIATE_TEST_SUITE_P(Gpus, AlltoAllInPlace, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });
INSTANTIATE_TEST_SUITE_P(Ranks, AlltoAllInPlaceAcrossHosts, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

}  // namespace
