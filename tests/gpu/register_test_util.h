// Shared by the registration tests (register_test.cc: ncclCommRegister; graph_register_test.cc:
// NCCL_GRAPH_REGISTER): every collective on int32 buffers at rank-dependent offsets inside one
// allocation, with exact checks, and the REG lines the test process logged.
//
// Data: element i of rank r's input at iteration `it` is value(it, r, i), so every expected output
// is exact. Outputs are poisoned before every operation.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"

namespace regtest {

constexpr uint8_t kPoisonByte = 0xAB;
// Large enough for the Simple protocol (zero-copy needs it), odd so that the last chunk is ragged.
constexpr size_t kCount = (3 << 20) + 5;
// The folder of the logs that logHas reads, made once per test process (before it forks its
// ranks): a fresh one, so that a file an earlier run's process of the same pid appended to is never
// read.
inline const std::string& logDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/braid-register-test-XXXXXX";
    const char* made = mkdtemp(pattern);
    return std::string(made != nullptr ? made : "/tmp");
  }();
  return dir;
}

// NCCL_DEBUG_FILE of the tests that read their log (%p: one file per process).
inline std::string logPattern() { return logDir() + "/braid-%p.log"; }

inline int32_t value(int it, int rank, size_t i) {
  return static_cast<int32_t>(colltest::inputHash(static_cast<uint64_t>(it), rank, i) % 2001) - 1000;
}

enum class Alloc { kMemAlloc, kCudaMalloc };
inline const char* allocName(Alloc a) { return a == Alloc::kMemAlloc ? "ncclMemAlloc" : "cudaMalloc"; }

enum class Op { kAllReduce, kAllGather, kBroadcast, kReduceScatter, kReduce };
// Every collective: the write-direct ones (peers write into receive buffers), then the read-direct
// ones (peers read send buffers).
constexpr Op kAllOps[] = {Op::kAllReduce, Op::kAllGather, Op::kBroadcast, Op::kReduceScatter, Op::kReduce};
inline const char* opName(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return "AllReduce";
    case Op::kAllGather:
      return "AllGather";
    case Op::kBroadcast:
      return "Broadcast";
    case Op::kReduceScatter:
      return "ReduceScatter";
    case Op::kReduce:
      return "Reduce";
  }
  return "?";
}

// ReduceScatter and Reduce alternate an int32 sum (even iterations) with a float average (odd):
// ncclAvg of floats multiplies every input by 1/nranks before the sum (a preOp), which a read-direct
// step must apply to the peer input it reads itself. The inputs are integers and nranks a power of
// two, so the float average is exact too.
inline bool average(Op op, int it) { return (op == Op::kReduceScatter || op == Op::kReduce) && it % 2 == 1; }
inline int32_t floatBits(float f) {
  int32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}
// The buffer's 32 bits of input value v: v itself, or the float v for an average.
inline int32_t element(bool avg, int32_t v) { return avg ? floatBits(static_cast<float>(v)) : v; }

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int nranks = 0;
  Alloc alloc = Alloc::kMemAlloc;
  char* chunk = nullptr;  // one allocation holding every buffer below
  size_t chunkBytes = 0;
  void* handle = nullptr;      // its registration (register_test only)
  size_t blockCount = kCount;  // elements per rank's block in send and recv
  int32_t* send = nullptr;     // nranks blocks
  int32_t* recv = nullptr;     // nranks blocks
  cudaGraphExec_t exec = nullptr;
};

inline size_t bufBytes(const Rank& r) { return static_cast<size_t>(r.nranks) * r.blockCount * sizeof(int32_t); }

// Buffers at rank-dependent offsets inside one chunk (NCCL's documented example, and offsets that differ
// between ranks, which the exchange must carry per rank).
inline int allocate(Rank& r, int nranks, Alloc alloc, size_t blockCount = kCount) {
  r.nranks = nranks;
  r.alloc = alloc;
  r.blockCount = blockCount;
  CHILD_CUDA(cudaSetDevice(r.rank));
  r.chunkBytes = 2 * bufBytes(r) + (8 << 20);
  if (alloc == Alloc::kMemAlloc) {
    CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&r.chunk), r.chunkBytes));
  } else {
    CHILD_CUDA(cudaMalloc(&r.chunk, r.chunkBytes));
  }
  r.send = reinterpret_cast<int32_t*>(r.chunk + 4096 * r.rank);
  r.recv = reinterpret_cast<int32_t*>(r.chunk + bufBytes(r) + (1 << 20) + 256 * r.rank);
  return 0;
}

inline int freeChunk(Rank& r) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  if (r.alloc == Alloc::kMemAlloc) {
    CHILD_NCCL(ncclMemFree(r.chunk));
  } else {
    CHILD_CUDA(cudaFree(r.chunk));
  }
  r.chunk = nullptr;
  return 0;
}

inline int32_t* input(const Rank& r, Op op, bool inPlace) {
  if (!inPlace) return r.send;
  return op == Op::kAllGather ? r.recv + r.rank * kCount : r.recv;
}

inline int32_t* output(const Rank& r, Op op, bool inPlace) {
  return op == Op::kReduceScatter && inPlace ? r.recv + r.rank * kCount : r.recv;
}

inline size_t inputCount(Op op, int nranks) { return op == Op::kReduceScatter ? nranks * kCount : kCount; }
inline size_t outputCount(Op op, int nranks) { return op == Op::kAllGather ? nranks * kCount : kCount; }

inline int root(int it, int nranks) { return it % nranks; }

// Poisons the output, then writes iteration `it`'s input (synchronously).
inline int prepare(Rank& r, Op op, bool inPlace, int it) {
  std::vector<int32_t> host(inputCount(op, r.nranks));
  for (size_t i = 0; i < host.size(); i++) host[i] = element(average(op, it), value(it, r.rank, i));
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(gputest::poisonSync(r.recv, kPoisonByte, bufBytes(r)));
  CHILD_CUDA(gputest::uploadSync(input(r, op, inPlace), host.data(), host.size() * sizeof(int32_t)));
  return 0;
}

// Enqueues `op` on every rank this thread drives, in one group. `it` picks the root and the
// reduction (see average).
inline int issue(std::vector<Rank>& ranks, Op op, bool inPlace, int it) {
  const ncclDataType_t type = average(op, it) ? ncclFloat : ncclInt32;
  const ncclRedOp_t red = average(op, it) ? ncclAvg : ncclSum;
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    const int32_t* in = input(r, op, inPlace);
    int32_t* out = output(r, op, inPlace);
    const int rt = root(it, r.nranks);
    switch (op) {
      case Op::kAllReduce:
        CHILD_NCCL(ncclAllReduce(in, out, kCount, ncclInt32, ncclSum, r.comm, r.stream));
        break;
      case Op::kAllGather:
        CHILD_NCCL(ncclAllGather(in, out, kCount, ncclInt32, r.comm, r.stream));
        break;
      case Op::kBroadcast:
        CHILD_NCCL(ncclBroadcast(in, out, kCount, ncclInt32, rt, r.comm, r.stream));
        break;
      case Op::kReduceScatter:
        CHILD_NCCL(ncclReduceScatter(in, out, kCount, type, red, r.comm, r.stream));
        break;
      case Op::kReduce:
        CHILD_NCCL(ncclReduce(in, out, kCount, type, red, rt, r.comm, r.stream));
        break;
    }
  }
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// What element i of rank r's output must be after iteration `it` of `op`. A Reduce rank other than
// the root keeps its receive buffer as it was: poison, or its own input when in place.
inline int32_t expected(Op op, bool inPlace, int it, int r, int nranks, size_t i) {
  const bool avg = average(op, it);
  switch (op) {
    case Op::kAllGather:
      return value(it, static_cast<int>(i / kCount), i % kCount);
    case Op::kBroadcast:
      return value(it, root(it, nranks), i);
    case Op::kReduce:
      if (r != root(it, nranks)) {
        if (inPlace) return element(avg, value(it, r, i));
        int32_t poison = 0;
        std::memset(&poison, kPoisonByte, sizeof(poison));
        return poison;
      }
      break;
    case Op::kReduceScatter:
      i += static_cast<size_t>(r) * kCount;
      break;
    case Op::kAllReduce:
      break;
  }
  int32_t sum = 0;
  for (int q = 0; q < nranks; q++) sum += value(it, q, i);
  return avg ? floatBits(static_cast<float>(sum) / static_cast<float>(nranks)) : sum;
}

// Waits for the rank's stream and compares its whole output with what iteration `it` must give.
inline int check(const Rank& r, Op op, bool inPlace, int it) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  std::vector<int32_t> got(outputCount(op, r.nranks));
  CHILD_CUDA(cudaMemcpy(got.data(), output(r, op, inPlace), got.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < got.size(); i++) {
    const int32_t want = expected(op, inPlace, it, r.rank, r.nranks, i);
    if (got[i] != want) {
      std::fprintf(stderr, "%s%s it %d rank %d: element %zu is %d, expected %d\n", opName(op),
                   inPlace ? " in place" : "", it, r.rank, i, got[i], want);
      return 1;
    }
  }
  return 0;
}

// Runs `op` eagerly on every rank (in place when asked) and checks every rank's output exactly.
inline int runAndCheck(std::vector<Rank>& ranks, Op op, bool inPlace, int it) {
  for (Rank& r : ranks) {
    if (prepare(r, op, inPlace, it) != 0) return 1;
  }
  if (issue(ranks, op, inPlace, it) != 0) return 1;
  for (Rank& r : ranks) {
    if (check(r, op, inPlace, it) != 0) return 1;
  }
  return 0;
}

// Captures what issue() enqueues on every rank's stream (thread-local capture: every mode allows
// it) and instantiates it into each rank's exec; the graphs themselves go at once, the executables
// keep what they hold. R: Rank or a type derived from it.
template <typename R, typename Issue>
int captureGraphs(std::vector<R>& ranks, const Issue& issue) {
  for (R& r : ranks) {
    CHILD_CUDA(cudaSetDevice(r.rank));
    CHILD_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
  }
  if (issue() != 0) return 1;
  // Every capture ends before any instantiation: a thread with a capture in progress may not instantiate.
  std::vector<cudaGraph_t> graphs(ranks.size());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(ranks[i].rank));
    CHILD_CUDA(cudaStreamEndCapture(ranks[i].stream, &graphs[i]));
  }
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(ranks[i].rank));
    CHILD_CUDA(cudaGraphInstantiate(&ranks[i].exec, graphs[i], 0));
    CHILD_CUDA(cudaGraphDestroy(graphs[i]));
  }
  return 0;
}

// Destroys every rank's exec once its stream is idle (which releases what its graph held).
template <typename R>
int destroyExecs(std::vector<R>& ranks) {
  for (R& r : ranks) {
    CHILD_CUDA(cudaSetDevice(r.rank));
    CHILD_CUDA(cudaStreamSynchronize(r.stream));
    CHILD_CUDA(cudaGraphExecDestroy(r.exec));
    r.exec = nullptr;
  }
  return 0;
}

// The memory check of the release tests: after freeing rank r's chunk in `cycle`, notes its free
// GPU memory at cycle `settled` and, at `last`, fails (1) when more than a chunk of it is gone.
inline int checkMemoryFlat(const Rank& r, int cycle, int settled, int last, size_t* freeAtSettled) {
  if (cycle != settled && cycle != last) return 0;
  size_t freeBytes = 0, total = 0;
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaMemGetInfo(&freeBytes, &total));
  if (cycle == settled) {
    *freeAtSettled = freeBytes;
  } else if (freeBytes + r.chunkBytes < *freeAtSettled) {
    std::fprintf(stderr, "rank %d: %zu MiB of GPU memory lost over %d cycles (a chunk is %zu MiB)\n", r.rank,
                 (*freeAtSettled - freeBytes) >> 20, last - settled, r.chunkBytes >> 20);
    return 1;
  }
  return 0;
}

// Whether the log this process wrote (logPattern()) has a line containing `text`. When the answer
// is not `expected`, the last 20 lines are printed to say what happened instead.
inline bool logHas(const std::string& text, bool expected = true) {
  std::ifstream in(logDir() + "/braid-" + std::to_string(getpid()) + ".log");
  std::vector<std::string> lines;
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    found = found || line.find(text) != std::string::npos;
    lines.push_back(line);
  }
  if (found != expected) {
    std::fprintf(stderr, "log of pid %d %s \"%s\"; its last lines:\n", static_cast<int>(getpid()),
                 found ? "says" : "does not say", text.c_str());
    for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); i++) {
      std::fprintf(stderr, "  %s\n", lines[i].c_str());
    }
  }
  return found;
}

// Sends this process's INFO lines of the REG subsystem to logPattern() (for logHas) while it lives.
struct ScopedRegLog {
  colltest::ScopedSetenv debug{"NCCL_DEBUG", "INFO"};
  colltest::ScopedSetenv subsys{"NCCL_DEBUG_SUBSYS", "REG"};
  colltest::ScopedSetenv file{"NCCL_DEBUG_FILE", logPattern().c_str()};
};

// The registration tests' parameters: GPUs, and how the ranks run (rank_modes.h).
class GpusAndMode : public ::testing::TestWithParam<std::tuple<int, gputest::Mode>> {
 protected:
  int n() const { return std::get<0>(GetParam()); }
  gputest::Mode mode() const { return std::get<1>(GetParam()); }
  void SetUp() override {
    if (gputest::gpuCount() < n()) GTEST_SKIP() << "needs " << n() << " GPUs";
    std::string tier;
    if (gputest::leftOutOfQuickTier(n(), &tier)) GTEST_SKIP() << tier;
    // Processes (descriptors between processes) and threads (pointers within one) are the two paths.
    if (gputest::quickTier() && mode() == gputest::Mode::kOneThread) GTEST_SKIP() << "quick tier: no one-thread mode";
  }
};

inline auto gpusAndModes() {
  return ::testing::Combine(
      ::testing::Values(2, 4, 8),
      ::testing::Values(gputest::Mode::kProcesses, gputest::Mode::kOneThread, gputest::Mode::kThreads));
}

inline std::string gpusAndModeName(const ::testing::TestParamInfo<std::tuple<int, gputest::Mode>>& p) {
  const gputest::Mode m = std::get<1>(p.param);
  return std::to_string(std::get<0>(p.param)) + "Gpus" +
         (m == gputest::Mode::kProcesses   ? "Processes"
          : m == gputest::Mode::kOneThread ? "OneThread"
                                           : "Threads");
}

}  // namespace regtest
