// User buffer registration on real GPUs: ncclCommRegister / ncclCommDeregister of ncclMemAlloc and
// cudaMalloc memory, NCCL's documented patterns (send and receive buffers registered,
// operations at offsets inside them; one large chunk registered once with both buffers in it),
// every collective zero-copy, checked exactly against the host (in place too, with inputs changed
// between iterations, ReduceScatter and Reduce with a preOp too; again on at most two channels, where
// a two-rank channel moves parts of many FIFO slots in one step), the REG line that says zero-copy was used, the WARN
// and the copy path when ranks disagree, deregistering a buffer a pending operation uses (refused, then accepted once
// it is done), and bad arguments. 2 and 4 GPUs; processes, one thread, threads.
//
// Data and checks: register_test_util.h.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"
#include "register_test_util.h"

namespace {

using gputest::Mode;
using gputest::modeName;
using regtest::Alloc;
using regtest::kCount;
using regtest::logHas;
using regtest::Op;
using regtest::Rank;
using regtest::runAndCheck;

constexpr unsigned kWatchdogSeconds = 300;

// The chunk of regtest::allocate, registered once with every buffer in it.
int setUp(Rank& r, int nranks, Alloc alloc) {
  if (regtest::allocate(r, nranks, alloc) != 0) return 1;
  CHILD_NCCL(ncclCommRegister(r.comm, r.chunk, r.chunkBytes, &r.handle));
  return 0;
}

int tearDown(Rank& r) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
  return regtest::freeChunk(r);
}

// Eager collectives of every size these tests use go zero-copy (the default is larger).
class Register : public regtest::GpusAndMode {
  colltest::ScopedSetenv eagerZeroCopy_{"BRAID_ZERO_COPY_EAGER_BYTES", "65536"};
};

// Registers every rank's chunk, runs every collective twice out of place and twice in place (exact
// checks, iterations alternating the reduction), and checks the REG lines of both directions.
int zeroCopyRounds(std::vector<Rank>& ranks, int n, Alloc alloc) {
  for (Rank& r : ranks) {
    if (setUp(r, n, alloc) != 0) return 1;
  }
  int it = 0;
  for (Op op : regtest::kAllOps) {
    for (bool inPlace : {false, true}) {
      for (int rep = 0; rep < 2; rep++) {
        if (runAndCheck(ranks, op, inPlace, it++) != 0) return 1;
      }
    }
  }
  if (!colltest::againstReference()) {
    CHILD_EXPECT(logHas("zero-copy (peers write into them)"));
    CHILD_EXPECT(logHas("zero-copy (peers read from them)"));
  }
  for (Rank& r : ranks) {
    if (tearDown(r) != 0) return 1;
  }
  return 0;
}

TEST_P(Register, ZeroCopyCollectivesAreExactInAndOutOfPlace) {
  regtest::ScopedRegLog log;
  const int n = this->n();
  for (Alloc alloc : {Alloc::kMemAlloc, Alloc::kCudaMalloc}) {
    SCOPED_TRACE(regtest::allocName(alloc));
    EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n, alloc](std::vector<Rank>& ranks) {
                return zeroCopyRounds(ranks, n, alloc);
              }));
  }
}

// On two ranks a direct channel moves its whole part in one step (device/coll/ring_colls.h,
// twoRankDirectChunk): ReduceScatter and Reduce read it from the peer's send buffer, AllGather and
// Broadcast write it into the peer's receive buffer. On at most two channels a part is 6-12 MiB,
// many FIFO slots' worth, and the last one ends ragged; every collective stays exact, in place too,
// the average's preOp included. On more ranks the same operations check the pipelined direct rings.
TEST_P(Register, DirectOnFewChannelsIsExact) {
  colltest::ScopedSetenv channels("NCCL_MAX_NCHANNELS", "2");
  regtest::ScopedRegLog log;
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<Rank>(n, mode(), kWatchdogSeconds, [n](std::vector<Rank>& ranks) {
              return zeroCopyRounds(ranks, n, Alloc::kMemAlloc);
            }));
}

// Rank 0 registers only its send buffer: every rank takes the copy path, rank 0's log says why,
// and the results stay exact.
TEST_P(Register, RanksThatDisagreeGetAWarnAndTheCopyPath) {
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's mismatch handling";
  colltest::ScopedSetenv debug("NCCL_DEBUG", "WARN");
  colltest::ScopedSetenv file("NCCL_DEBUG_FILE", regtest::logPattern().c_str());
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
              CHILD_EXPECT(logHas("all ranks must pass registered buffers or none"));
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

INSTANTIATE_TEST_SUITE_P(Gpus, Register, regtest::gpusAndModes(), regtest::gpusAndModeName);

}  // namespace
