// What the per-call config tests share: the eight operations with their buffers and expected
// int32 results, ranks in every mode with outputs poisoned and guarded, calls issued with a config,
// the fixture.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"

namespace collconfig {

using colltest::againstReference;
using colltest::ScopedSetenv;
using gputest::Mode;
using gputest::modeName;

inline constexpr unsigned kWatchdogSeconds = 300;
inline constexpr unsigned char kPoison = colltest::kPoison;
inline constexpr size_t kGuard = colltest::kGuardBytes;
inline constexpr size_t kSmall = 4099;           // elements per rank block: LL, Direct where it exists
inline constexpr size_t kLarge = (1 << 18) + 3;  // 1 MiB per rank block: Simple rings

enum class Op { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter };
inline constexpr Op kOps[] = {Op::kAllReduce,     Op::kBroadcast, Op::kReduce, Op::kAllGather,
                              Op::kReduceScatter, Op::kAlltoAll,  Op::kGather, Op::kScatter};

inline const char* opName(Op op) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "AlltoAll",  "Gather", "Scatter"};
  return kNames[static_cast<int>(op)];
}
// Elements a rank sends and the elements of its checked output, for `count` (the call's count).
inline size_t sendElems(Op op, size_t count, int n) {
  return op == Op::kReduceScatter || op == Op::kAlltoAll || op == Op::kScatter ? n * count : count;
}
inline size_t recvElems(Op op, size_t count, int n) {
  return op == Op::kAllGather || op == Op::kAlltoAll || op == Op::kGather ? n * count : count;
}
// Whether rank `me` has an output (Reduce and Gather: the root only).
inline bool hasOutput(Op op, int me, int root) { return (op != Op::kReduce && op != Op::kGather) || me == root; }

inline uint32_t input(uint64_t seed, int rank, size_t i) {
  return static_cast<uint32_t>(colltest::inputHash(seed, rank, i));
}
inline uint32_t sumOf(uint64_t seed, int n, size_t i) {
  uint32_t s = 0;
  for (int r = 0; r < n; r++) s += input(seed, r, i);
  return s;
}

// Element i of rank me's output.
inline uint32_t expected(Op op, uint64_t seed, int n, int root, int me, size_t count, size_t i) {
  const int p = static_cast<int>(i / count);
  const size_t j = i % count;
  switch (op) {
    case Op::kAllReduce:
    case Op::kReduce:
      return sumOf(seed, n, i);
    case Op::kBroadcast:
      return input(seed, root, i);
    case Op::kAllGather:
    case Op::kGather:
      return input(seed, p, j);
    case Op::kReduceScatter:
      return sumOf(seed, n, me * count + i);
    case Op::kAlltoAll:
      return input(seed, p, me * count + j);
    case Op::kScatter:
      return input(seed, root, me * count + i);
  }
  return 0;
}

struct Rank {
  int rank = 0;
  int nranks = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  uint32_t* send = nullptr;
  uint32_t* recv = nullptr;
};

// One call: the operation, its count, its config (null: the plain call) and what it must return.
struct Call {
  Op op;
  size_t count;
  const ncclCollConfig_t* config;
  ncclResult_t want = ncclSuccess;
  const char* field = nullptr;  // named by the WARN of a refused call
};

inline int rootOf(int n) { return n > 1 ? 1 : 0; }

inline ncclResult_t issue(const Rank& r, const Call& c) {
  const int root = rootOf(r.nranks);
  const ncclCollConfig_t* cfg = c.config;
  switch (c.op) {
    case Op::kAllReduce:
      return ncclAllReduceConfig(r.send, r.recv, c.count, ncclUint32, ncclSum, r.comm, r.stream, cfg);
    case Op::kBroadcast:
      return ncclBroadcastConfig(r.send, r.recv, c.count, ncclUint32, root, r.comm, r.stream, cfg);
    case Op::kReduce:
      return ncclReduceConfig(r.send, r.recv, c.count, ncclUint32, ncclSum, root, r.comm, r.stream, cfg);
    case Op::kAllGather:
      return ncclAllGatherConfig(r.send, r.recv, c.count, ncclUint32, r.comm, r.stream, cfg);
    case Op::kReduceScatter:
      return ncclReduceScatterConfig(r.send, r.recv, c.count, ncclUint32, ncclSum, r.comm, r.stream, cfg);
    case Op::kAlltoAll:
      return ncclAlltoAllConfig(r.send, r.recv, c.count, ncclUint32, r.comm, r.stream, cfg);
    case Op::kGather:
      return ncclGatherConfig(r.send, r.recv, c.count, ncclUint32, root, r.comm, r.stream, cfg);
    case Op::kScatter:
      return ncclScatterConfig(r.send, r.recv, c.count, ncclUint32, root, r.comm, r.stream, cfg);
  }
  return ncclInvalidArgument;
}

inline int allocRank(Rank& r, int n) {
  r.nranks = n;
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaMalloc(&r.send, n * kLarge * 4));
  CHILD_CUDA(cudaMalloc(&r.recv, n * kLarge * 4 + kGuard));
  return 0;
}

inline int freeRank(Rank& r) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_CUDA(cudaFree(r.send));
  CHILD_CUDA(cudaFree(r.recv));
  return 0;
}

// Poisons the output (and its guard) and uploads this rank's input under `seed`.
inline int prepare(const Rank& r, const Call& c, uint64_t seed) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(gputest::poisonSync(r.recv, kPoison, recvElems(c.op, c.count, r.nranks) * 4 + kGuard));
  std::vector<uint32_t> host(sendElems(c.op, c.count, r.nranks));
  for (size_t i = 0; i < host.size(); i++) host[i] = input(seed, r.rank, i);
  CHILD_CUDA(gputest::uploadSync(r.send, host.data(), host.size() * 4));
  return 0;
}

// After the call: the output exact (or, for a rank without output or a refused call, all poison),
// the guard poisoned.
inline int check(const Rank& r, const Call& c, uint64_t seed, bool ran, const std::string& what) {
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  const size_t elems = recvElems(c.op, c.count, r.nranks);
  std::vector<uint32_t> out(elems + kGuard / 4);
  CHILD_CUDA(cudaMemcpy(out.data(), r.recv, out.size() * 4, cudaMemcpyDeviceToHost));
  uint32_t poison;
  std::memset(&poison, kPoison, sizeof(poison));
  const int root = rootOf(r.nranks);
  const bool output = ran && hasOutput(c.op, r.rank, root);
  for (size_t i = 0; i < out.size(); i++) {
    const uint32_t want = output && i < elems ? expected(c.op, seed, r.nranks, root, r.rank, c.count, i) : poison;
    if (out[i] != want) {
      std::fprintf(stderr, "%s: %s count %zu, rank %d: [%zu] = 0x%08x, expected 0x%08x%s\n", what.c_str(), opName(c.op),
                   c.count, r.rank, i, out[i], want, i >= elems ? " (guard)" : "");
      return 1;
    }
  }
  return 0;
}

// Runs `calls` one after another on every rank of this thread (each in a group over the thread's
// ranks) and checks each one's return code, WARN and output. Returns nonzero on a failure.
inline int runCalls(std::vector<Rank>& ranks, const std::vector<Call>& calls, uint64_t seed, const std::string& what) {
  for (const Call& c : calls) {
    for (Rank& r : ranks) {
      if (prepare(r, c, seed) != 0) return 1;
    }
    // The first error, and the WARN that came with it (the group's own WARN follows a refused call).
    ncclResult_t got = ncclGroupStart();
    std::string text;
    for (Rank& r : ranks) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
      const ncclResult_t res = issue(r, c);
      if (got == ncclSuccess && res != ncclSuccess) text = ncclGetLastError(nullptr);
      if (got == ncclSuccess) got = res;
    }
    const ncclResult_t end = ncclGroupEnd();
    if (got == ncclSuccess && end != ncclSuccess) text = ncclGetLastError(nullptr);
    if (got == ncclSuccess) got = end;
    if (got != c.want) {
      std::fprintf(stderr, "%s: %s count %zu -> %s, expected %s (last error: %s)\n", what.c_str(), opName(c.op),
                   c.count, ncclGetErrorString(got), ncclGetErrorString(c.want), text.c_str());
      return 1;
    }
    if (c.want != ncclSuccess && c.field != nullptr && !againstReference() && ranks.size() == 1 &&
        text.find(c.field) == std::string::npos) {
      std::fprintf(stderr, "%s: %s refused without naming %s: \"%s\"\n", what.c_str(), opName(c.op), c.field,
                   text.c_str());
      return 1;
    }
    for (Rank& r : ranks) {
      if (check(r, c, seed, c.want == ncclSuccess, what) != 0) return 1;
    }
    seed++;
  }
  return 0;
}

// ranksPerHost > 0: processes on emulated hosts of that many ranks (they may share GPUs).
inline int withRanks(int n, Mode mode, const std::function<int(std::vector<Rank>&)>& body, int ranksPerHost = 0) {
  return gputest::withRanks<Rank>(
      n, mode, kWatchdogSeconds,
      [&](std::vector<Rank>& ranks) {
        for (Rank& r : ranks) {
          if (allocRank(r, n) != 0) return 1;
        }
        int rc = body(ranks);
        for (Rank& r : ranks) rc |= freeRank(r);
        return rc;
      },
      ranksPerHost);
}

// A config that sets one thing.
inline ncclCollConfig_t configWith(const std::function<void(ncclCollConfig_t&)>& set) {
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  set(c);
  return c;
}

class CollConfigTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (gputest::gpuCount() < n()) GTEST_SKIP() << "needs " << n() << " GPUs; this machine has " << gputest::gpuCount();
    std::string tier;
    if (gputest::leftOutOfQuickTier(n(), &tier)) GTEST_SKIP() << tier;
  }
  int n() const { return GetParam(); }
};

}  // namespace collconfig
