// Graph registration on real GPUs (NCCL_GRAPH_REGISTER, NCCL's documented default): every
// collective captured on buffers nobody registered (ncclMemAlloc and cudaMalloc memory) goes
// zero-copy and stays exact over replays with new inputs, in place too; with
// NCCL_GRAPH_REGISTER=0 it takes the copy path; and registrations released by destroying their
// graph or by ncclCommDeregister leave no memory behind on any GPU (the peers unmap them).
// 2 and 4 GPUs; processes, one thread, threads. Data and checks: register_test_util.h.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"
#include "register_test_util.h"

namespace {

using gputest::Mode;
using regtest::Alloc;
using regtest::logHas;
using regtest::Op;
using regtest::Rank;

constexpr unsigned kWatchdogSeconds = 300;

// Replays the captured `op` `replays` times with new inputs each time, checking every output. The
// iterations keep the root and the reduction of the capture (iteration `it`).
int replayAndCheck(std::vector<Rank>& ranks, Op op, bool inPlace, int it, int replays) {
  for (int rep = 0; rep < replays; rep++) {
    const int itRep = it + rep * 2 * ranks[0].nranks;
    for (Rank& r : ranks) {
      if (regtest::prepare(r, op, inPlace, itRep) != 0) return 1;
      CHILD_CUDA(cudaGraphLaunch(r.exec, r.stream));
    }
    for (Rank& r : ranks) {
      if (regtest::check(r, op, inPlace, itRep) != 0) return 1;
    }
  }
  return 0;
}

int captureReplayDestroy(std::vector<Rank>& ranks, Op op, bool inPlace, int it, int replays) {
  if (regtest::captureGraphs(ranks, [&] { return regtest::issue(ranks, op, inPlace, it); }) != 0) return 1;
  if (replayAndCheck(ranks, op, inPlace, it, replays) != 0) return 1;
  return regtest::destroyExecs(ranks);
}

class GraphRegister : public regtest::GpusAndMode {};

TEST_P(GraphRegister, CapturedCollectivesGoZeroCopyAndStayExact) {
  regtest::ScopedRegLog log;
  const int n = this->n();
  for (Alloc alloc : {Alloc::kMemAlloc, Alloc::kCudaMalloc}) {
    SCOPED_TRACE(regtest::allocName(alloc));
    EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n, alloc](std::vector<Rank>& ranks) {
                for (Rank& r : ranks) {
                  if (regtest::allocate(r, n, alloc) != 0) return 1;
                }
                int it = 0;
                for (Op op : regtest::kAllOps) {
                  for (bool inPlace : {false, true}) {
                    if (captureReplayDestroy(ranks, op, inPlace, it++, 3) != 0) return 1;
                  }
                }
                if (!colltest::againstReference()) {
                  CHILD_EXPECT(logHas("graph registration"));
                  CHILD_EXPECT(logHas("zero-copy (peers write into them)"));
                  CHILD_EXPECT(logHas("zero-copy (peers read from them)"));
                }
                for (Rank& r : ranks) {
                  if (regtest::freeChunk(r) != 0) return 1;
                }
                return 0;
              }));
  }
}

TEST_P(GraphRegister, OffKeepsTheCopyPath) {
  if (mode() != Mode::kProcesses) GTEST_SKIP() << "the parameter: once is enough";
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's REG lines";
  colltest::ScopedSetenv off("NCCL_GRAPH_REGISTER", "0");
  regtest::ScopedRegLog log;
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              if (regtest::allocate(ranks[0], n, Alloc::kMemAlloc) != 0) return 1;
              if (captureReplayDestroy(ranks, Op::kAllReduce, false, 5, 2) != 0) return 1;
              CHILD_EXPECT(!logHas("graph registration", false));
              return regtest::freeChunk(ranks[0]);
            }));
}

// Fresh buffers every cycle, used through a graph registration (graph destroyed) or a local one
// (deregistered), then freed: without the peers unmapping released registrations, every cycle
// would keep a chunk of each GPU alive (the peers' mappings hold the memory).
TEST_P(GraphRegister, ReleasedRegistrationsLeaveNoMemoryBehind) {
  if (mode() == Mode::kThreads) GTEST_SKIP() << "one process per GPU and one thread cover it";
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's release of peer mappings";
  regtest::ScopedRegLog log;
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              constexpr int kCycles = 40;
              constexpr int kSettled = 6;  // cycles before the first measurement
              std::vector<size_t> freeAtSettled(ranks.size());
              for (int cycle = 0; cycle < kCycles; cycle++) {
                const Alloc alloc = cycle % 2 == 0 ? Alloc::kMemAlloc : Alloc::kCudaMalloc;
                for (Rank& r : ranks) {
                  if (regtest::allocate(r, n, alloc) != 0) return 1;
                }
                if (cycle % 3 == 0) {
                  for (Rank& r : ranks) CHILD_NCCL(ncclCommRegister(r.comm, r.chunk, r.chunkBytes, &r.handle));
                  if (regtest::runAndCheck(ranks, Op::kAllGather, false, cycle) != 0) return 1;
                  for (Rank& r : ranks) CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
                } else if (captureReplayDestroy(ranks, Op::kAllReduce, cycle % 2 == 0, cycle, 1) != 0) {
                  return 1;
                }
                for (size_t i = 0; i < ranks.size(); i++) {
                  if (regtest::freeChunk(ranks[i]) != 0) return 1;
                  if (regtest::checkMemoryFlat(ranks[i], cycle, kSettled, kCycles - 1, &freeAtSettled[i]) != 0) {
                    return 1;
                  }
                }
              }
              CHILD_EXPECT(logHas("released: its last graph was destroyed"));
              CHILD_EXPECT(logHas("unmaps it once its earlier kernels are done"));
              return 0;
            }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, GraphRegister, regtest::gpusAndModes(), regtest::gpusAndModeName);

}  // namespace
