// User buffer registration on real GPUs (guide page 002): ncclCommRegister / ncclCommDeregister of
// ncclMemAlloc and cudaMalloc memory, the page's examples (send and receive buffers registered,
// operations at offsets inside them; one large chunk registered once with both buffers in it),
// zero-copy AllReduce, AllGather and Broadcast checked exactly against the host (in place too,
// with inputs changed between iterations), the REG line that says zero-copy was used, the WARN and
// the copy path when ranks disagree, deregistering a buffer a pending operation uses (refused, then
// accepted once it is done), and bad arguments. 2 and 4 GPUs; processes, one thread, threads.
//
// Data: int32, element i of rank r's input at iteration `it` is value(it, r, i), so every expected
// output is exact. Outputs are poisoned before every operation.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"

namespace {

using gputest::Mode;
using gputest::modeName;

constexpr unsigned kWatchdogSeconds = 300;
constexpr uint8_t kPoisonByte = 0xAB;
// Large enough for the Simple protocol (zero-copy needs it), odd so that the last chunk is ragged.
constexpr size_t kCount = (3 << 20) + 5;

int32_t value(int it, int rank, size_t i) {
  return static_cast<int32_t>(colltest::inputHash(static_cast<uint64_t>(it), rank, i) % 2001) - 1000;
}

enum class Alloc { kMemAlloc, kCudaMalloc };

struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int nranks = 0;
  Alloc alloc = Alloc::kMemAlloc;
  char* chunk = nullptr;  // one allocation, registered once, holding every buffer below
  void* handle = nullptr;
  int32_t* send = nullptr;  // nranks * kCount elements
  int32_t* recv = nullptr;  // nranks * kCount elements
};

size_t bufBytes(const Rank& r) { return static_cast<size_t>(r.nranks) * kCount * sizeof(int32_t); }

// Buffers at rank-dependent offsets inside one chunk (the page's example, and offsets that differ
// between ranks, which the exchange must carry per rank).
int setUp(Rank& r, int nranks, Alloc alloc) {
  r.nranks = nranks;
  r.alloc = alloc;
  CHILD_CUDA(cudaSetDevice(r.rank));
  const size_t chunkBytes = 2 * bufBytes(r) + (8 << 20);
  if (alloc == Alloc::kMemAlloc) {
    CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&r.chunk), chunkBytes));
  } else {
    CHILD_CUDA(cudaMalloc(&r.chunk, chunkBytes));
  }
  CHILD_NCCL(ncclCommRegister(r.comm, r.chunk, chunkBytes, &r.handle));
  r.send = reinterpret_cast<int32_t*>(r.chunk + 4096 * r.rank);
  r.recv = reinterpret_cast<int32_t*>(r.chunk + bufBytes(r) + (1 << 20) + 256 * r.rank);
  return 0;
}

int tearDown(Rank& r) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
  if (r.alloc == Alloc::kMemAlloc) {
    CHILD_NCCL(ncclMemFree(r.chunk));
  } else {
    CHILD_CUDA(cudaFree(r.chunk));
  }
  return 0;
}

int fillInput(Rank& r, int32_t* where, size_t n, int it) {
  std::vector<int32_t> host(n);
  for (size_t i = 0; i < n; i++) host[i] = value(it, r.rank, i);
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaMemcpy(where, host.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice));
  return 0;
}

enum class Op { kAllReduce, kAllGather, kBroadcast };
const char* opName(Op op) {
  return op == Op::kAllReduce ? "AllReduce" : op == Op::kAllGather ? "AllGather" : "Broadcast";
}

// Runs `op` on every rank (in place when asked) and checks every rank's output exactly.
int runAndCheck(std::vector<Rank>& ranks, Op op, bool inPlace, int it) {
  const int n = ranks[0].nranks;
  const int root = it % n;
  for (Rank& r : ranks) {
    int32_t* in = r.send;
    if (inPlace) in = op == Op::kAllGather ? r.recv + r.rank * kCount : r.recv;
    CHILD_CUDA(cudaSetDevice(r.rank));
    CHILD_CUDA(cudaMemset(r.recv, kPoisonByte, bufBytes(r)));
    if (fillInput(r, in, kCount, it) != 0) return 1;
  }
  CHILD_NCCL(ncclGroupStart());
  for (Rank& r : ranks) {
    int32_t* in = r.send;
    if (inPlace) in = op == Op::kAllGather ? r.recv + r.rank * kCount : r.recv;
    if (op == Op::kAllReduce) CHILD_NCCL(ncclAllReduce(in, r.recv, kCount, ncclInt32, ncclSum, r.comm, r.stream));
    if (op == Op::kAllGather) CHILD_NCCL(ncclAllGather(in, r.recv, kCount, ncclInt32, r.comm, r.stream));
    if (op == Op::kBroadcast) CHILD_NCCL(ncclBroadcast(in, r.recv, kCount, ncclInt32, root, r.comm, r.stream));
  }
  CHILD_NCCL(ncclGroupEnd());
  for (Rank& r : ranks) {
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
        want = value(it, root, i);
      }
      if (got[i] != want) {
        std::fprintf(stderr, "%s%s it %d rank %d: element %zu is %d, expected %d\n", opName(op),
                     inPlace ? " in place" : "", it, r.rank, i, got[i], want);
        return 1;
      }
    }
  }
  return 0;
}

// The log lines this process wrote (NCCL_DEBUG_FILE below) contain `text`; when not, they are
// printed (the last 20) to say what happened instead.
bool logSays(const std::string& text) {
  std::ifstream in("/tmp/braid-register-test-" + std::to_string(getpid()) + ".log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) != std::string::npos) return true;
    lines.push_back(line);
  }
  std::fprintf(stderr, "log of pid %d does not say \"%s\"; its last lines:\n", static_cast<int>(getpid()),
               text.c_str());
  for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); i++) {
    std::fprintf(stderr, "  %s\n", lines[i].c_str());
  }
  return false;
}

class Register : public ::testing::TestWithParam<std::tuple<int, Mode>> {
 protected:
  int n() const { return std::get<0>(GetParam()); }
  Mode mode() const { return std::get<1>(GetParam()); }
  void SetUp() override {
    if (gputest::gpuCount() < n()) GTEST_SKIP() << "needs " << n() << " GPUs";
  }
};

TEST_P(Register, ZeroCopyCollectivesAreExactInAndOutOfPlace) {
  colltest::ScopedSetenv debug("NCCL_DEBUG", "INFO");
  colltest::ScopedSetenv subsys("NCCL_DEBUG_SUBSYS", "REG");
  colltest::ScopedSetenv file("NCCL_DEBUG_FILE", "/tmp/braid-register-test-%p.log");
  const int n = this->n();
  for (Alloc alloc : {Alloc::kMemAlloc, Alloc::kCudaMalloc}) {
    SCOPED_TRACE(alloc == Alloc::kMemAlloc ? "ncclMemAlloc" : "cudaMalloc");
    EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n, alloc](std::vector<Rank>& ranks) {
                for (Rank& r : ranks) {
                  if (setUp(r, n, alloc) != 0) return 1;
                }
                int it = 0;
                for (Op op : {Op::kAllReduce, Op::kAllGather, Op::kBroadcast}) {
                  for (bool inPlace : {false, true}) {
                    for (int rep = 0; rep < 2; rep++) {
                      if (runAndCheck(ranks, op, inPlace, it++) != 0) return 1;
                    }
                  }
                }
                if (!colltest::againstReference()) CHILD_EXPECT(logSays("zero-copy (peers write into them)"));
                for (Rank& r : ranks) {
                  if (tearDown(r) != 0) return 1;
                }
                return 0;
              }));
  }
}

// Rank 0 registers only its send buffer: every rank takes the copy path, rank 0's log says why,
// and the results stay exact.
TEST_P(Register, RanksThatDisagreeGetAWarnAndTheCopyPath) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's mismatch handling";
  colltest::ScopedSetenv debug("NCCL_DEBUG", "WARN");
  colltest::ScopedSetenv file("NCCL_DEBUG_FILE", "/tmp/braid-register-test-%p.log");
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              for (Rank& r : ranks) {
                if (setUp(r, n, Alloc::kMemAlloc) != 0) return 1;
                if (r.rank == 0) {
                  CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
                  CHILD_NCCL(ncclCommRegister(r.comm, r.send, kCount * sizeof(int32_t), &r.handle));
                }
              }
              if (runAndCheck(ranks, Op::kAllReduce, false, 7) != 0) return 1;
              CHILD_EXPECT(logSays("all ranks must pass registered buffers or none"));
              for (Rank& r : ranks) {
                if (tearDown(r) != 0) return 1;
              }
              return 0;
            }));
}

// The operation waits behind a host function that holds the stream until the test lets it go:
// deregistering meanwhile is ncclInvalidUsage and keeps the registration; afterwards it succeeds.
TEST_P(Register, DeregisteringABufferInUseIsRefused) {
  if (colltest::againstReference()) GTEST_SKIP() << "NCCL does not check pending use";
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              static std::atomic<int> released{0};
              released = 0;
              auto hold = [](void*) {
                while (released.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
              };
              for (Rank& r : ranks) {
                if (setUp(r, n, Alloc::kMemAlloc) != 0) return 1;
              }
              // The first operation connects and maps the peers' buffers (CUDA calls that may wait
              // for the GPU); the one that waits behind the held stream is the second.
              if (runAndCheck(ranks, Op::kAllGather, false, 3) != 0) return 1;
              for (Rank& r : ranks) CHILD_CUDA(cudaLaunchHostFunc(r.stream, hold, nullptr));
              CHILD_NCCL(ncclGroupStart());
              for (Rank& r : ranks) {
                CHILD_NCCL(ncclAllGather(r.send, r.recv, kCount, ncclInt32, r.comm, r.stream));
              }
              CHILD_NCCL(ncclGroupEnd());
              for (Rank& r : ranks) CHILD_EXPECT(ncclCommDeregister(r.comm, r.handle) == ncclInvalidUsage);
              released = 1;
              for (Rank& r : ranks) {
                if (tearDown(r) != 0) return 1;  // deregisters: now accepted
              }
              return 0;
            }));
}

TEST_P(Register, BadArgumentsAreRejected) {
  if (mode() != Mode::kProcesses) GTEST_SKIP() << "argument checks: once is enough";
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's argument checks";
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              void* buf = nullptr;
              void* handle = nullptr;
              CHILD_CUDA(cudaMalloc(&buf, 1 << 20));
              CHILD_EXPECT(ncclCommRegister(r.comm, nullptr, 1 << 20, &handle) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommRegister(r.comm, buf, 0, &handle) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommRegister(r.comm, buf, 1 << 20, nullptr) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommRegister(r.comm, buf, 2 << 20, &handle) == ncclInvalidArgument);  // past its end
              int host = 0;
              CHILD_EXPECT(ncclCommRegister(r.comm, &host, sizeof(host), &handle) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommDeregister(r.comm, nullptr) == ncclInvalidArgument);
              CHILD_EXPECT(ncclCommDeregister(r.comm, &host) == ncclInvalidArgument);
              CHILD_NCCL(ncclCommRegister(r.comm, buf, 1 << 20, &handle));
              CHILD_NCCL(ncclCommDeregister(r.comm, handle));
              CHILD_EXPECT(ncclCommDeregister(r.comm, handle) == ncclInvalidArgument);  // twice
              CHILD_CUDA(cudaFree(buf));
              return 0;
            }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, Register,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values(Mode::kProcesses, Mode::kOneThread, Mode::kThreads)),
                         [](const ::testing::TestParamInfo<std::tuple<int, Mode>>& p) {
                           const Mode m = std::get<1>(p.param);
                           return std::to_string(std::get<0>(p.param)) + "Gpus" +
                                  (m == Mode::kProcesses   ? "Processes"
                                   : m == Mode::kOneThread ? "OneThread"
                                                           : "Threads");
                         });

}  // namespace
