// In-place ncclAlltoAll (sendbuff == recvbuff) on real GPUs, and in-place ncclGather and
// ncclScatter with the buffer conventions of nccl-tests.
//
// AlltoAll: every datatype, counts 0, 1, odd, and several MiB per peer, on 16-byte-aligned and
// misaligned buffers; inputs are random bytes per rank (NaN and denormal bit patterns included for
// the float types: AlltoAll only moves data, so every byte is compared exactly) and the guard after
// the buffer must stay poisoned; by default the blocks move without staging (each receive waits for
// its channel's send), in the staging tests staged. Eagerly and captured in a CUDA graph replayed with fresh inputs
// (receives of captured operations go zero-copy by graph registration); ranks as processes, as
// threads, and as one thread driving every GPU; graphs of one communicator replayed alternately, on
// two streams, beside eager AlltoAlls, while the staging memory grows; a destroy while the thread
// captures an unrelated stream; with a small staging budget (several kernels of peers per
// AlltoAll), budgets that differ between ranks, and ranks that run out of place beside ranks in
// place; grouped with other AlltoAlls (five in one group: staged in one batch); on registered
// buffers (zero-copy receives); over SHM; across emulated hosts (the network path). NVIDIA's NCCL
// leaves in-place AlltoAll's result undefined, so those tests are Braid's only.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"
#include "register_test_util.h"  // logHas
#include "util/dtype.h"

namespace {

using gputest::Mode;
using gputest::modeName;

constexpr unsigned kWatchdogSeconds = 400;
constexpr unsigned char kPoison = colltest::kPoison;
constexpr size_t kGuard = colltest::kGuardBytes;
constexpr ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                     ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                     ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};
using Body = gputest::RanksBody<Rank>;

int withRanks(int n, Mode mode, const Body& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(n, mode, kWatchdogSeconds, body, ranksPerHost);
}

// Byte i of rank `rank`'s input (all of its blocks) under `seed`.
uint8_t inputByte(uint64_t seed, int rank, size_t i) {
  return static_cast<uint8_t>(colltest::inputHash(seed, rank, i / 8) >> (8 * (i % 8)));
}

// One AlltoAll: its datatype and count, and where its buffers start past a 256-byte boundary (a
// multiple of the element size: not 16-byte aligned unless 0).
struct Case {
  ncclDataType_t type;
  size_t count;
  size_t misalign = 0;
};

size_t blockBytes(const Case& c) { return c.count * braid::dtypeSize(c.type); }

std::string caseName(const Case& c) {
  return std::string(colltest::typeName(c.type)) + " count " + std::to_string(c.count) + " misaligned by " +
         std::to_string(c.misalign);
}

// A rank's buffers for one case: buff (n blocks, then a poisoned guard), and send when this rank
// runs out of place (null: in place).
struct Buffers {
  char* base = nullptr;
  char* buff = nullptr;
  char* sendBase = nullptr;
  char* send = nullptr;
};

int allocBuffers(const Rank& r, int n, const Case& c, bool inPlace, Buffers* b) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  const size_t bytes = 256 + static_cast<size_t>(n) * blockBytes(c) + kGuard;
  CHILD_CUDA(cudaMalloc(&b->base, bytes));
  b->buff = b->base + c.misalign;
  if (!inPlace) {
    CHILD_CUDA(cudaMalloc(&b->sendBase, bytes));
    b->send = b->sendBase + c.misalign;
  }
  return 0;
}

int freeBuffers(const Rank& r, Buffers* b) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_CUDA(cudaFree(b->base));
  if (b->sendBase != nullptr) CHILD_CUDA(cudaFree(b->sendBase));
  *b = Buffers{};
  return 0;
}

// Poisons buff and its guard, then writes this rank's input (seed) where the AlltoAll reads it.
int fillInput(const Rank& r, int n, const Case& c, const Buffers& b, uint64_t seed) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  const size_t bytes = static_cast<size_t>(n) * blockBytes(c);
  CHILD_CUDA(gputest::poisonSync(b.buff, kPoison, bytes + kGuard));
  if (bytes == 0) return 0;
  std::vector<uint8_t> host(bytes);
  for (size_t i = 0; i < bytes; i++) host[i] = inputByte(seed, r.rank, i);
  CHILD_CUDA(gputest::uploadSync(b.send != nullptr ? b.send : b.buff, host.data(), bytes));
  return 0;
}

// Whether buff holds want(p, i) at byte i of block p, and poison in the guard after it.
int checkBlocks(const Rank& r, int n, const Case& c, const Buffers& b, const char* what,
                const std::function<uint8_t(int p, size_t i)>& want) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  const size_t block = blockBytes(c);
  std::vector<uint8_t> host(static_cast<size_t>(n) * block + kGuard);
  CHILD_CUDA(cudaMemcpy(host.data(), b.buff, host.size(), cudaMemcpyDeviceToHost));
  for (int p = 0; p < n; p++) {
    for (size_t i = 0; i < block; i++) {
      const uint8_t got = host[static_cast<size_t>(p) * block + i];
      if (got != want(p, i)) {
        std::fprintf(stderr, "%s %s, rank %d: byte %zu of block %d is 0x%02x, expected 0x%02x\n", what,
                     caseName(c).c_str(), r.rank, i, p, got, want(p, i));
        return 1;
      }
    }
  }
  for (size_t i = 0; i < kGuard; i++) {
    if (host[static_cast<size_t>(n) * block + i] != kPoison) {
      std::fprintf(stderr, "%s %s, rank %d: guard byte %zu after the buffer was written\n", what, caseName(c).c_str(),
                   r.rank, i);
      return 1;
    }
  }
  return 0;
}

// After `times` AlltoAlls of the input under seed: block p holds rank p's block r (odd times) or
// the rank's own input (even times).
int checkOutput(const Rank& r, int n, const Case& c, const Buffers& b, uint64_t seed, int times = 1) {
  const size_t block = blockBytes(c);
  const std::string what = "AlltoAll seed " + std::to_string(seed);
  return checkBlocks(r, n, c, b, what.c_str(), [&](int p, size_t i) {
    return times % 2 == 1 ? inputByte(seed, p, static_cast<size_t>(r.rank) * block + i)
                          : inputByte(seed, r.rank, static_cast<size_t>(p) * block + i);
  });
}

// The AlltoAll of case c on every rank of this thread, in one group.
int issue(std::vector<Rank>& ranks, const Case& c, std::vector<Buffers>& bufs) {
  CHILD_NCCL(ncclGroupStart());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    const char* send = bufs[i].send != nullptr ? bufs[i].send : bufs[i].buff;
    CHILD_NCCL(ncclAlltoAll(send, bufs[i].buff, c.count, c.type, ranks[i].comm, ranks[i].stream));
  }
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// Runs each case eagerly and checks it; inPlace(rank) says which ranks run in place.
int runCases(
    std::vector<Rank>& ranks, int n, const std::vector<Case>& cases, uint64_t seed,
    const std::function<bool(int)>& inPlace = [](int) { return true; }) {
  for (const Case& c : cases) {
    std::vector<Buffers> bufs(ranks.size());
    for (size_t i = 0; i < ranks.size(); i++) {
      if (allocBuffers(ranks[i], n, c, inPlace(ranks[i].rank), &bufs[i]) != 0) return 1;
      if (fillInput(ranks[i], n, c, bufs[i], seed) != 0) return 1;
    }
    if (issue(ranks, c, bufs) != 0) return 1;
    int rc = 0;
    for (size_t i = 0; i < ranks.size(); i++) rc |= checkOutput(ranks[i], n, c, bufs[i], seed);
    for (size_t i = 0; i < ranks.size(); i++) rc |= freeBuffers(ranks[i], &bufs[i]);
    if (rc != 0) return rc;
    seed++;
  }
  return 0;
}

// Captures what `enqueue` issues on the streams of the ranks of this thread into one graph per rank.
// Every capture that began is ended, also when enqueue fails: a capture left open forbids cudaMalloc
// and cudaFree on this thread. Each capture ends before any graph is instantiated (not allowed while
// this thread captures).
int captureGraphs(std::vector<Rank>& ranks, const std::function<int()>& enqueue, std::vector<cudaGraphExec_t>* execs) {
  size_t begun = 0;
  cudaError_t began = cudaSuccess;
  for (const Rank& r : ranks) {
    began = cudaSetDevice(gputest::deviceOfRank(r.rank));
    if (began == cudaSuccess) began = cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal);
    if (began != cudaSuccess) break;
    begun++;
  }
  int rc = began != cudaSuccess ? 1 : enqueue();
  std::vector<cudaGraph_t> graphs(ranks.size(), nullptr);
  for (size_t i = 0; i < begun; i++) {
    (void)cudaSetDevice(gputest::deviceOfRank(ranks[i].rank));
    const cudaError_t ended = cudaStreamEndCapture(ranks[i].stream, &graphs[i]);
    if (ended != cudaSuccess) {
      std::fprintf(stderr, "rank %d: cudaStreamEndCapture -> %s\n", ranks[i].rank, cudaGetErrorString(ended));
      rc = 1;
    }
  }
  if (began != cudaSuccess) std::fprintf(stderr, "cudaStreamBeginCapture -> %s\n", cudaGetErrorString(began));
  execs->assign(ranks.size(), nullptr);
  for (size_t i = 0; i < ranks.size(); i++) {
    if (graphs[i] == nullptr) continue;
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    if (rc == 0) CHILD_CUDA(cudaGraphInstantiate(&(*execs)[i], graphs[i], 0));
    CHILD_CUDA(cudaGraphDestroy(graphs[i]));
  }
  return rc;
}

int destroyGraphs(std::vector<Rank>& ranks, std::vector<cudaGraphExec_t>* execs) {
  for (size_t i = 0; i < execs->size(); i++) {
    if ((*execs)[i] == nullptr) continue;
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaGraphExecDestroy((*execs)[i]));
  }
  execs->clear();
  return 0;
}

int launchGraphs(std::vector<Rank>& ranks, const std::vector<cudaGraphExec_t>& execs,
                 const std::vector<cudaStream_t>& streams) {
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaGraphLaunch(execs[i], streams[i]));
  }
  return 0;
}

std::vector<cudaStream_t> streamsOf(const std::vector<Rank>& ranks) {
  std::vector<cudaStream_t> streams;
  for (const Rank& r : ranks) streams.push_back(r.stream);
  return streams;
}

// Captures case c in place (`times` AlltoAlls, one group each, so they apply in order: the operations
// of one group run concurrently, as in NCCL) on every rank of this thread, then replays the graph
// `replays` times, each on a fresh input. Buffers are allocated before any capture begins: a
// thread's own capture forbids cudaMalloc on it.
int runCaptured(std::vector<Rank>& ranks, int n, const Case& c, uint64_t seed, int replays, int times = 1) {
  std::vector<Buffers> bufs(ranks.size());
  for (size_t i = 0; i < ranks.size(); i++) {
    if (allocBuffers(ranks[i], n, c, true, &bufs[i]) != 0) return 1;
  }
  std::vector<cudaGraphExec_t> execs;
  int rc = captureGraphs(
      ranks,
      [&] {
        for (int t = 0; t < times; t++) {
          if (issue(ranks, c, bufs) != 0) return 1;
        }
        return 0;
      },
      &execs);
  for (int k = 0; k < replays && rc == 0; k++) {
    for (size_t i = 0; i < ranks.size(); i++) {
      if (fillInput(ranks[i], n, c, bufs[i], seed + static_cast<uint64_t>(k)) != 0) return 1;
    }
    if (launchGraphs(ranks, execs, streamsOf(ranks)) != 0) return 1;
    for (size_t i = 0; i < ranks.size(); i++) {
      rc |= checkOutput(ranks[i], n, c, bufs[i], seed + static_cast<uint64_t>(k), times);
    }
  }
  rc |= destroyGraphs(ranks, &execs);
  for (size_t i = 0; i < ranks.size(); i++) rc |= freeBuffers(ranks[i], &bufs[i]);
  return rc;
}

// Every datatype with counts 0, 1, 7 and 4099 (also misaligned by one element), and `largeBytes`
// per peer rounded to an odd count.
std::vector<Case> sweepCases(size_t largeBytes) {
  std::vector<Case> cases;
  for (ncclDataType_t t : kTypes) {
    const size_t size = braid::dtypeSize(t);
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}}) cases.push_back({t, count, 0});
    if (size < 16) cases.push_back({t, 4099, size});
    if (largeBytes > 0) cases.push_back({t, largeBytes / size | 1, 0});
  }
  return cases;
}

class AlltoAllInPlace : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < n()) GTEST_SKIP() << "needs " << n() << " GPUs";
    std::string tier;
    if (gputest::leftOutOfQuickTier(n(), &tier)) GTEST_SKIP() << tier;
  }
  int n() const { return GetParam(); }
};

// Braid computes in-place AlltoAll; NVIDIA's NCCL accepts it but leaves the result undefined.
#define SKIP_AGAINST_REFERENCE()                                                           \
  if (colltest::againstReference()) {                                                      \
    GTEST_SKIP() << "NVIDIA's NCCL accepts in-place AlltoAll without defining its result"; \
  }

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
