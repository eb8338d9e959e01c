// Shared by the registration tests (register_test.cc: ncclCommRegister; graph_register_test.cc:
// NCCL_GRAPH_REGISTER): AllReduce, AllGather and Broadcast of int32 on buffers at rank-dependent
// offsets inside one allocation, with exact checks, and the REG lines the test process logged.
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
// NCCL_DEBUG_FILE of the tests that read their log (%p: one file per process).
constexpr const char* kLogPattern = "/tmp/braid-register-test-%p.log";

inline int32_t value(int it, int rank, size_t i) {
  return static_cast<int32_t>(colltest::inputHash(static_cast<uint64_t>(it), rank, i) % 2001) - 1000;
}

enum class Alloc { kMemAlloc, kCudaMalloc };
inline const char* allocName(Alloc a) { return a == Alloc::kMemAlloc ? "ncclMemAlloc" : "cudaMalloc"; }

enum class Op { kAllReduce, kAllGather, kBroadcast };
inline const char* opName(Op op) {
  return op == Op::kAllReduce ? "AllReduce" : op == Op::kAllGather ? "AllGather" : "Broadcast";
}

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

// Buffers at rank-dependent offsets inside one chunk (the page's example, and offsets that differ
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

inline int root(int it, int nranks) { return it % nranks; }

// Poisons the output, then writes iteration `it`'s input (synchronously).
inline int prepare(Rank& r, Op op, bool inPlace, int it) {
  std::vector<int32_t> host(kCount);
  for (size_t i = 0; i < kCount; i++) host[i] = value(it, r.rank, i);
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaMemset(r.recv, kPoisonByte, bufBytes(r)));
  CHILD_CUDA(cudaMemcpy(input(r, op, inPlace), host.data(), kCount * sizeof(int32_t), cudaMemcpyHostToDevice));
  return 0;
}

// Enqueues `op` on every rank this thread drives, in one group. `it` picks the Broadcast root.
inline int issue(std::vector<Rank>& ranks, Op op, bool inPlace, int it) {
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    int32_t* in = input(r, op, inPlace);
    if (op == Op::kAllReduce) CHILD_NCCL(ncclAllReduce(in, r.recv, kCount, ncclInt32, ncclSum, r.comm, r.stream));
    if (op == Op::kAllGather) CHILD_NCCL(ncclAllGather(in, r.recv, kCount, ncclInt32, r.comm, r.stream));
    if (op == Op::kBroadcast) {
      CHILD_NCCL(ncclBroadcast(in, r.recv, kCount, ncclInt32, root(it, r.nranks), r.comm, r.stream));
    }
  }
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// Waits for the rank's stream and compares its whole output with what iteration `it` must give.
inline int check(const Rank& r, Op op, bool inPlace, int it) {
  const int n = r.nranks;
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  const size_t outCount = op == Op::kAllGather ? n * kCount : kCount;
  std::vector<int32_t> got(outCount);
  CHILD_CUDA(cudaMemcpy(got.data(), r.recv, outCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < outCount; i++) {
    int32_t want = 0;
    if (op == Op::kAllReduce) {
      for (int q = 0; q < n; q++) want += value(it, q, i);
    } else if (op == Op::kAllGather) {
      want = value(it, static_cast<int>(i / kCount), i % kCount);
    } else {
      want = value(it, root(it, n), i);
    }
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

// Whether the log this process wrote (kLogPattern) has a line containing `text`. When the answer
// is not `expected`, the last 20 lines are printed to say what happened instead.
inline bool logHas(const std::string& text, bool expected = true) {
  std::ifstream in("/tmp/braid-register-test-" + std::to_string(getpid()) + ".log");
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

// Sends this process's INFO lines of the REG subsystem to kLogPattern (for logHas) while it lives.
struct ScopedRegLog {
  colltest::ScopedSetenv debug{"NCCL_DEBUG", "INFO"};
  colltest::ScopedSetenv subsys{"NCCL_DEBUG_SUBSYS", "REG"};
  colltest::ScopedSetenv file{"NCCL_DEBUG_FILE", kLogPattern};
};

// The registration tests' parameters: GPUs, and how the ranks run (rank_modes.h).
class GpusAndMode : public ::testing::TestWithParam<std::tuple<int, gputest::Mode>> {
 protected:
  int n() const { return std::get<0>(GetParam()); }
  gputest::Mode mode() const { return std::get<1>(GetParam()); }
  void SetUp() override {
    if (gputest::gpuCount() < n()) GTEST_SKIP() << "needs " << n() << " GPUs";
  }
};

inline auto gpusAndModes() {
  return ::testing::Combine(
      ::testing::Values(2, 4),
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
