// What the in-place AlltoAll tests share: ranks in every mode, cases (type, count, alignment), the
// buffers with their poisoned guards, random per-rank inputs and the exact check of every byte,
// eager and captured issue, graphs replayed with fresh inputs, the sweep's cases, the fixture.
#pragma once

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

namespace a2a_inplace {

using gputest::Mode;
using gputest::modeName;

inline constexpr unsigned kWatchdogSeconds = 400;
inline constexpr unsigned char kPoison = colltest::kPoison;
inline constexpr size_t kGuard = colltest::kGuardBytes;
inline constexpr ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                            ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                            ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};
using Body = gputest::RanksBody<Rank>;

inline int withRanks(int n, Mode mode, const Body& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(n, mode, kWatchdogSeconds, body, ranksPerHost);
}

// Byte i of rank `rank`'s input (all of its blocks) under `seed`.
inline uint8_t inputByte(uint64_t seed, int rank, size_t i) {
  return static_cast<uint8_t>(colltest::inputHash(seed, rank, i / 8) >> (8 * (i % 8)));
}

// One AlltoAll: its datatype and count, and where its buffers start past a 256-byte boundary (a
// multiple of the element size: not 16-byte aligned unless 0).
struct Case {
  ncclDataType_t type;
  size_t count;
  size_t misalign = 0;
};

inline size_t blockBytes(const Case& c) { return c.count * braid::dtypeSize(c.type); }

inline std::string caseName(const Case& c) {
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

inline int allocBuffers(const Rank& r, int n, const Case& c, bool inPlace, Buffers* b) {
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

inline int freeBuffers(const Rank& r, Buffers* b) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_CUDA(cudaFree(b->base));
  if (b->sendBase != nullptr) CHILD_CUDA(cudaFree(b->sendBase));
  *b = Buffers{};
  return 0;
}

// Poisons buff and its guard, then writes this rank's input (seed) where the AlltoAll reads it.
inline int fillInput(const Rank& r, int n, const Case& c, const Buffers& b, uint64_t seed) {
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
inline int checkBlocks(const Rank& r, int n, const Case& c, const Buffers& b, const char* what,
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
inline int checkOutput(const Rank& r, int n, const Case& c, const Buffers& b, uint64_t seed, int times = 1) {
  const size_t block = blockBytes(c);
  const std::string what = "AlltoAll seed " + std::to_string(seed);
  return checkBlocks(r, n, c, b, what.c_str(), [&](int p, size_t i) {
    return times % 2 == 1 ? inputByte(seed, p, static_cast<size_t>(r.rank) * block + i)
                          : inputByte(seed, r.rank, static_cast<size_t>(p) * block + i);
  });
}

// The AlltoAll of case c on every rank of this thread, in one group.
inline int issue(std::vector<Rank>& ranks, const Case& c, std::vector<Buffers>& bufs) {
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
inline int runCases(
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
inline int captureGraphs(std::vector<Rank>& ranks, const std::function<int()>& enqueue,
                         std::vector<cudaGraphExec_t>* execs) {
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

inline int destroyGraphs(std::vector<Rank>& ranks, std::vector<cudaGraphExec_t>* execs) {
  for (size_t i = 0; i < execs->size(); i++) {
    if ((*execs)[i] == nullptr) continue;
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaGraphExecDestroy((*execs)[i]));
  }
  execs->clear();
  return 0;
}

inline int launchGraphs(std::vector<Rank>& ranks, const std::vector<cudaGraphExec_t>& execs,
                        const std::vector<cudaStream_t>& streams) {
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaGraphLaunch(execs[i], streams[i]));
  }
  return 0;
}

inline std::vector<cudaStream_t> streamsOf(const std::vector<Rank>& ranks) {
  std::vector<cudaStream_t> streams;
  for (const Rank& r : ranks) streams.push_back(r.stream);
  return streams;
}

// Captures case c in place (`times` AlltoAlls, one group each, so they apply in order: the operations
// of one group run concurrently, as in NCCL) on every rank of this thread, then replays the graph
// `replays` times, each on a fresh input. Buffers are allocated before any capture begins: a
// thread's own capture forbids cudaMalloc on it.
inline int runCaptured(std::vector<Rank>& ranks, int n, const Case& c, uint64_t seed, int replays, int times = 1) {
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
inline std::vector<Case> sweepCases(size_t largeBytes) {
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

}  // namespace a2a_inplace
