// In-place ncclAlltoAll (sendbuff == recvbuff) on real GPUs (alltoall_inplace_harness.h): every
// datatype, counts 0, 1, odd, and several MiB per peer, on 16-byte-aligned and misaligned buffers;
// inputs are random bytes per rank (NaN and denormal bit patterns included for the float types:
// AlltoAll only moves data, so every byte is compared exactly) and the guard after the buffer must
// stay poisoned. Eagerly and captured in a CUDA graph replayed with fresh inputs (receives of
// captured operations go zero-copy by graph registration); ranks as processes, as threads, and as one
// thread driving every GPU; with a small staging budget (several kernels of peers per AlltoAll),
// budgets that differ between ranks, and ranks that run out of place beside ranks in place; graphs of
// one communicator replayed alternately, on two streams, beside eager AlltoAlls, while the staging
// memory grows; a destroy while the thread captures an unrelated stream. NVIDIA's NCCL leaves
// in-place AlltoAll's result undefined, so these tests are Braid's only.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "alltoall_inplace_harness.h"

namespace {

using namespace a2a_inplace;  // NOLINT(google-build-using-namespace): this family's harness

TEST_P(AlltoAllInPlace, EveryDatatypeAndSize) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    // Several MiB per peer where a rank drives its GPU alone; less for one thread driving them all.
    const size_t large = mode == Mode::kOneThread ? (1 << 20) : (3 << 20) + 5;
    EXPECT_EQ(0,
              withRanks(n, mode, [&](std::vector<Rank>& ranks) { return runCases(ranks, n, sweepCases(large), 1); }));
  }
}

TEST_P(AlltoAllInPlace, CapturedAndReplayed) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) {
                // Small; above the size captured receives go zero-copy from (64 KiB); several MiB.
                const Case cases[] = {{ncclFloat32, 5, 0}, {ncclBfloat16, 100003, 0}, {ncclUint8, (5 << 20) + 1, 3}};
                uint64_t seed = 100;
                for (const Case& c : cases) {
                  if (runCaptured(ranks, n, c, seed, 3) != 0) return 1;
                  seed += 10;
                }
                // Two in one graph: the second undoes the first.
                return runCaptured(ranks, n, {ncclFloat64, 70001, 8}, seed, 3, 2);
              }));
  }
}

// A stage budget of 1 MiB: every AlltoAll above it moves its peers in several kernels, each
// staging only its own peers' blocks (the next kernel's blocks copied beside the transfers).
TEST_P(AlltoAllInPlace, BatchesOfPeersWithinTheStageBudget) {
  SKIP_AGAINST_REFERENCE();
  colltest::ScopedSetenv budget("BRAID_P2P_STAGE_BYTES", "1048576");
  colltest::ScopedSetenv stageAll("BRAID_P2P_INPLACE_GUARD", "0");
  const int n = this->n();
  const std::vector<Case> cases = {{ncclInt32, 75001, 0}, {ncclFloat16, (1 << 19) + 3, 2}, {ncclInt8, 3 << 20, 0}};
  for (Mode mode : {Mode::kProcesses, Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) {
                if (runCases(ranks, n, cases, 200) != 0) return 1;
                return runCaptured(ranks, n, cases[1], 210, 3);
              }));
  }
  // Ranks batching differently: odd ranks with the default budget (one kernel), even ranks with
  // 1 MiB; then ranks in place beside ranks out of place.
  SCOPED_TRACE("mixed budgets, mixed in place and out of place");
  EXPECT_EQ(0, withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) {
              if (ranks[0].rank % 2 == 1) setenv("BRAID_P2P_STAGE_BYTES", "67108864", 1);  // before its first use
              if (runCases(ranks, n, cases, 220) != 0) return 1;
              return runCases(ranks, n, cases, 230, [](int rank) { return rank % 2 == 0; });
            }));
}

// One graph (or an eager AlltoAll) of graphsAlternately: its case, buffers and graphs.
struct Step {
  Case c;
  std::vector<Buffers> bufs;
  std::vector<cudaGraphExec_t> execs;  // empty: eager
};

// Two graphs of one communicator replayed alternately, with eager AlltoAlls between them. The first
// is captured with the staging memory of a small AlltoAll; the second needs more, so the memory grows
// during its capture; an eager AlltoAll needs more again and grows it eagerly; a third graph,
// captured after that, shares the eager AlltoAll's memory and is replayed on another stream. Each
// graph must keep the memory it was captured with, and launches that share memory must not overlap,
// whatever their streams. The first graph runs twice per round (the second replay undoes the first).
int graphsAlternately(std::vector<Rank>& ranks, int n, uint64_t seed) {
  const Case small{ncclInt32, 30001, 0};
  std::vector<Step> steps = {{small, {}, {}},
                             {{ncclFloat32, (1 << 19) + 1, 4}, {}, {}},
                             {{ncclUint8, (3 << 20) + 1, 1}, {}, {}},
                             {small, {}, {}}};
  std::vector<cudaStream_t> side(ranks.size(), nullptr);
  for (size_t i = 0; i < ranks.size(); i++) {
    for (Step& s : steps) {
      s.bufs.resize(ranks.size());
      if (allocBuffers(ranks[i], n, s.c, true, &s.bufs[i]) != 0) return 1;
    }
    CHILD_CUDA(cudaStreamCreateWithFlags(&side[i], cudaStreamNonBlocking));
  }
  auto captureStep = [&](Step& s) {
    return captureGraphs(
        ranks, [&] { return issue(ranks, s.c, s.bufs); }, &s.execs);
  };
  int rc = captureStep(steps[0]);
  if (rc == 0) rc = captureStep(steps[1]);                   // in this order on every rank
  if (rc == 0) rc = runCases(ranks, n, {steps[2].c}, seed);  // the memory grows eagerly
  if (rc == 0) rc = captureStep(steps[3]);
  for (int round = 0; round < 3 && rc == 0; round++) {
    const uint64_t base = seed + 10 * static_cast<uint64_t>(round + 1);
    for (size_t k = 0; k < steps.size(); k++) {
      for (size_t i = 0; i < ranks.size(); i++) {
        if (fillInput(ranks[i], n, steps[k].c, steps[k].bufs[i], base + k) != 0) return 1;
      }
    }
    if (launchGraphs(ranks, steps[0].execs, streamsOf(ranks)) != 0) return 1;
    if (launchGraphs(ranks, steps[1].execs, streamsOf(ranks)) != 0) return 1;
    if (issue(ranks, steps[2].c, steps[2].bufs) != 0) return 1;
    if (launchGraphs(ranks, steps[3].execs, side) != 0) return 1;
    if (launchGraphs(ranks, steps[0].execs, streamsOf(ranks)) != 0) return 1;
    for (size_t i = 0; i < ranks.size(); i++) CHILD_CUDA(cudaStreamSynchronize(side[i]));
    for (size_t k = 0; k < steps.size(); k++) {
      for (size_t i = 0; i < ranks.size(); i++) {
        rc |= checkOutput(ranks[i], n, steps[k].c, steps[k].bufs[i], base + k, k == 0 ? 2 : 1);
      }
    }
  }
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaStreamSynchronize(side[i]));
    CHILD_CUDA(cudaStreamDestroy(side[i]));
  }
  for (Step& s : steps) {
    rc |= destroyGraphs(ranks, &s.execs);
    for (size_t i = 0; i < ranks.size(); i++) rc |= freeBuffers(ranks[i], &s.bufs[i]);
  }
  return rc;
}

TEST_P(AlltoAllInPlace, GraphsReplayedAlternatelyAsTheStageGrows) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  for (Mode mode : {Mode::kProcesses, Mode::kThreads, Mode::kOneThread}) {
    SCOPED_TRACE(modeName(mode));
    EXPECT_EQ(0, withRanks(n, mode, [&](std::vector<Rank>& ranks) { return graphsAlternately(ranks, n, 900); }));
  }
  // Staged, with a 1 MiB budget: on more than two ranks the larger AlltoAlls run in batches,
  // captured too.
  SCOPED_TRACE("1 MiB staging budget");
  colltest::ScopedSetenv budget("BRAID_P2P_STAGE_BYTES", "1048576");
  colltest::ScopedSetenv stageAll("BRAID_P2P_INPLACE_GUARD", "0");
  EXPECT_EQ(0,
            withRanks(n, Mode::kProcesses, [&](std::vector<Rank>& ranks) { return graphsAlternately(ranks, n, 950); }));
}

// A thread that destroys its communicators while it captures an unrelated stream, in either capture
// mode (as a failure path that left its capture open does): the destroy waits for the
// communicator's work and frees its memory, staging memory included, and succeeds; the capture stays
// valid.
int destroyWhileCapturing(std::vector<Rank>& ranks, int n, cudaStreamCaptureMode captureMode) {
  if (runCases(ranks, n, {{ncclInt32, 30001, 0}, {ncclFloat64, 300001, 8}}, 980) != 0) return 1;
  std::vector<cudaStream_t> other(ranks.size(), nullptr);
  std::vector<char*> scratch(ranks.size(), nullptr);
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaStreamCreateWithFlags(&other[i], cudaStreamNonBlocking));
    CHILD_CUDA(cudaMalloc(&scratch[i], 256));
  }
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaStreamBeginCapture(other[i], captureMode));
    CHILD_CUDA(cudaMemsetAsync(scratch[i], 0, 256, other[i]));
  }
  int rc = 0;
  for (Rank& r : ranks) {
    const ncclResult_t destroyed = ncclCommDestroy(r.comm);
    r.comm = nullptr;  // withRanks destroys a null communicator: nothing
    if (destroyed != ncclSuccess) {
      std::fprintf(stderr, "rank %d: ncclCommDestroy while capturing -> %s: %s\n", r.rank,
                   ncclGetErrorString(destroyed), ncclGetLastError(nullptr));
      rc = 1;
    }
  }
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    cudaGraph_t graph = nullptr;
    CHILD_CUDA(cudaStreamEndCapture(other[i], &graph));
    CHILD_EXPECT(graph != nullptr);
    CHILD_CUDA(cudaGraphDestroy(graph));
    CHILD_CUDA(cudaStreamDestroy(other[i]));
  }
  // Freed once no stream of this thread captures (a free during a capture is refused).
  for (size_t i = 0; i < ranks.size(); i++) CHILD_CUDA(cudaFree(scratch[i]));
  return rc;
}

TEST_P(AlltoAllInPlace, DestroyWhileTheThreadCaptures) {
  SKIP_AGAINST_REFERENCE();
  const int n = this->n();
  for (cudaStreamCaptureMode captureMode : {cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeGlobal}) {
    for (Mode mode : {Mode::kProcesses, Mode::kOneThread}) {
      SCOPED_TRACE(std::string(modeName(mode)) +
                   (captureMode == cudaStreamCaptureModeGlobal ? ", global capture" : ", thread-local capture"));
      EXPECT_EQ(0, withRanks(n, mode,
                             [&](std::vector<Rank>& ranks) { return destroyWhileCapturing(ranks, n, captureMode); }));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, AlltoAllInPlace, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "gpus"; });

}  // namespace
