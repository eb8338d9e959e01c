// Zero-copy ncclSend/ncclRecv on real GPUs (NCCL's registration serves collectives and
// sendrecv alike): sends and receives on registered ncclMemAlloc and cudaMalloc buffers go straight into
// the receiver's buffer; ring shifts and all-to-alls with per-pair sizes (some below the zero-copy
// size, and self sends) are exact and write nothing past a receive's count; a receive into an
// unregistered buffer takes the copy path beside zero-copy ones; captured sends and receives go
// zero-copy by graph registration and stay exact over replays; released registrations leave no
// memory behind on any GPU; registrations unrelated to a transfer, on some ranks only, stall
// nothing; and a registered send to an unregistered receive fails with a WARN instead of hanging.
// 2 and 4 GPUs; processes, one thread, threads.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstring>
#include <vector>

#include "coll_test_util.h"
#include "gpu_test_util.h"
#include "rank_modes.h"
#include "register_test_util.h"

namespace {

using gputest::Mode;
using regtest::Alloc;
using regtest::logHas;
using regtest::Rank;

constexpr unsigned kWatchdogSeconds = 300;
// Elements per block (one block per peer in each buffer): 20 MiB, above the size from which eager
// sends go zero-copy here (16 MiB, RegisterP2p), and odd.
constexpr size_t kCount = (5 << 20) + 3;

enum class Pattern { kRing, kAllToAll };

bool sendsTo(Pattern pattern, int from, int to, int n) { return pattern == Pattern::kAllToAll || to == (from + 1) % n; }

// Whether `from` sends `to` a block below the zero-copy size in shape `shape` (a quarter of the pairs).
bool smallPair(int shape, int from, int to) { return (shape + from + 2 * to) % 4 == 0; }

// Elements `from` sends `to` in shape `shape`: mostly about 20 MiB of different sizes, some pairs
// below the zero-copy size (4 KiB). A captured graph keeps its shape; the data changes with `it`.
size_t pairCount(int shape, int from, int to) {
  if (smallPair(shape, from, to)) return 1000 + static_cast<size_t>(from);
  return kCount - static_cast<size_t>((from * 5 + to * 3 + shape) % 7) * 1001;
}

int32_t pairValue(int it, int from, int to, size_t i) { return regtest::value(it, from * 16 + to, i); }

// One exchange: its pattern and shape, and (optionally) a receive redirected to `extra`, an
// unregistered buffer, for the data from the previous rank.
struct Exchange {
  Pattern pattern;
  int shape;
  bool useExtra = false;
};
constexpr int kExtraShape = 1;  // the shape of the exchanges with useExtra

struct P2pRank : Rank {
  int32_t* extra = nullptr;  // kCount elements, never registered
};

// Whether a rank of this process receives a block of the zero-copy size into `extra` (so its log
// must say that the unregistered buffer took the copy path). On 4 ranks, one of them receives a
// small block from its previous rank in every shape.
bool logsUnregisteredReceive(const std::vector<P2pRank>& ranks) {
  for (const P2pRank& r : ranks) {
    if (!smallPair(kExtraShape, (r.rank + r.nranks - 1) % r.nranks, r.rank)) return true;
  }
  return false;
}

int32_t* recvBlock(const P2pRank& r, const Exchange& x, int from) {
  if (x.useExtra && from == (r.rank + r.nranks - 1) % r.nranks) return r.extra;
  return r.recv + static_cast<size_t>(from) * kCount;
}

int prepare(P2pRank& r, const Exchange& x, int it) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(gputest::poisonSync(r.recv, regtest::kPoisonByte, regtest::bufBytes(r)));
  CHILD_CUDA(gputest::poisonSync(r.extra, regtest::kPoisonByte, kCount * sizeof(int32_t)));
  std::vector<int32_t> host(kCount);
  for (int to = 0; to < r.nranks; to++) {
    if (!sendsTo(x.pattern, r.rank, to, r.nranks)) continue;
    const size_t count = pairCount(x.shape, r.rank, to);
    for (size_t i = 0; i < count; i++) host[i] = pairValue(it, r.rank, to, i);
    CHILD_CUDA(gputest::uploadSync(r.send + static_cast<size_t>(to) * kCount, host.data(), count * sizeof(int32_t)));
  }
  return 0;
}

int issue(std::vector<P2pRank>& ranks, const Exchange& x) {
  CHILD_NCCL(ncclGroupStart());
  for (P2pRank& r : ranks) {
    const int n = r.nranks;
    for (int p = 0; p < n; p++) {
      if (sendsTo(x.pattern, r.rank, p, n)) {
        CHILD_NCCL(ncclSend(r.send + static_cast<size_t>(p) * kCount, pairCount(x.shape, r.rank, p), ncclInt32, p,
                            r.comm, r.stream));
      }
      if (sendsTo(x.pattern, p, r.rank, n)) {
        CHILD_NCCL(ncclRecv(recvBlock(r, x, p), pairCount(x.shape, p, r.rank), ncclInt32, p, r.comm, r.stream));
      }
    }
  }
  CHILD_NCCL(ncclGroupEnd());
  return 0;
}

// Every received block holds exactly what its sender sent, and poison past its count.
int check(const P2pRank& r, const Exchange& x, int it) {
  CHILD_CUDA(cudaSetDevice(r.rank));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  int32_t poison = 0;
  std::memset(&poison, regtest::kPoisonByte, sizeof(poison));
  std::vector<int32_t> got(kCount);
  for (int from = 0; from < r.nranks; from++) {
    if (!sendsTo(x.pattern, from, r.rank, r.nranks)) continue;
    CHILD_CUDA(cudaMemcpy(got.data(), recvBlock(r, x, from), kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
    const size_t count = pairCount(x.shape, from, r.rank);
    for (size_t i = 0; i < kCount; i++) {
      const int32_t want = i < count ? pairValue(it, from, r.rank, i) : poison;
      if (got[i] != want) {
        std::fprintf(stderr, "it %d: rank %d, element %zu of the %zu from rank %d is %d, expected %d\n", it, r.rank, i,
                     count, from, got[i], want);
        return 1;
      }
    }
  }
  return 0;
}

int runAndCheck(std::vector<P2pRank>& ranks, const Exchange& x, int it) {
  for (P2pRank& r : ranks) {
    if (prepare(r, x, it) != 0) return 1;
  }
  if (issue(ranks, x) != 0) return 1;
  for (P2pRank& r : ranks) {
    if (check(r, x, it) != 0) return 1;
  }
  return 0;
}

int allocate(P2pRank& r, int nranks, Alloc alloc) {
  if (regtest::allocate(r, nranks, alloc, kCount) != 0) return 1;
  CHILD_CUDA(cudaMalloc(&r.extra, kCount * sizeof(int32_t)));
  return 0;
}

int release(P2pRank& r) {
  if (regtest::freeChunk(r) != 0) return 1;
  CHILD_CUDA(cudaFree(r.extra));
  r.extra = nullptr;
  return 0;
}

// Captures exchange x on every rank (thread-local capture), replays it `replays` times with new
// inputs, checking each, and destroys it.
int captureAndReplay(std::vector<P2pRank>& ranks, const Exchange& x, int it, int replays) {
  if (regtest::captureGraphs(ranks, [&] { return issue(ranks, x); }) != 0) return 1;
  for (int rep = 0; rep < replays; rep++) {
    for (P2pRank& r : ranks) {
      if (prepare(r, x, it + rep) != 0) return 1;
      CHILD_CUDA(cudaGraphLaunch(r.exec, r.stream));
    }
    for (P2pRank& r : ranks) {
      if (check(r, x, it + rep) != 0) return 1;
    }
  }
  return regtest::destroyExecs(ranks);
}

// Eager sends of the blocks here go zero-copy (the default size is larger).
class RegisterP2p : public regtest::GpusAndMode {
  colltest::ScopedSetenv eagerZeroCopy_{"BRAID_ZERO_COPY_EAGER_BYTES", "16777216"};
};

TEST_P(RegisterP2p, RegisteredSendsAndReceivesAreZeroCopyAndExact) {
  regtest::ScopedRegLog log;
  const int n = this->n();
  for (Alloc alloc : {Alloc::kMemAlloc, Alloc::kCudaMalloc}) {
    SCOPED_TRACE(regtest::allocName(alloc));
    EXPECT_EQ(0, gputest::withRanks<P2pRank>(n, mode(), kWatchdogSeconds, [n, alloc](std::vector<P2pRank>& ranks) {
                for (P2pRank& r : ranks) {
                  if (allocate(r, n, alloc) != 0) return 1;
                  CHILD_NCCL(ncclCommRegister(r.comm, r.chunk, r.chunkBytes, &r.handle));
                }
                int it = 0;
                for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll}) {
                  for (int shape = 0; shape < 3; shape++) {  // the first use maps, the others reuse
                    if (runAndCheck(ranks, Exchange{pattern, shape}, it++) != 0) return 1;
                  }
                  if (runAndCheck(ranks, Exchange{pattern, kExtraShape, true}, it++) != 0) return 1;
                }
                if (!colltest::againstReference()) {
                  CHILD_EXPECT(logHas("zero-copy (written into the receiver's registered buffer)"));
                  CHILD_EXPECT(logHas("zero-copy (the sender writes into the registered buffer)"));
                  if (logsUnregisteredReceive(ranks)) CHILD_EXPECT(logHas("copy path (the buffer is not registered)"));
                }
                for (P2pRank& r : ranks) {
                  CHILD_CUDA(cudaSetDevice(r.rank));
                  CHILD_CUDA(cudaStreamSynchronize(r.stream));
                  CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
                  if (release(r) != 0) return 1;
                }
                return 0;
              }));
  }
}

TEST_P(RegisterP2p, CapturedSendsAndReceivesGoZeroCopyByGraphRegistration) {
  regtest::ScopedRegLog log;
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<P2pRank>(n, mode(), kWatchdogSeconds, [n](std::vector<P2pRank>& ranks) {
              for (P2pRank& r : ranks) {
                if (allocate(r, n, Alloc::kCudaMalloc) != 0) return 1;
              }
              if (captureAndReplay(ranks, Exchange{Pattern::kAllToAll, 2}, 0, 3) != 0) return 1;
              if (captureAndReplay(ranks, Exchange{Pattern::kRing, 0}, 10, 3) != 0) return 1;
              if (!colltest::againstReference()) {
                CHILD_EXPECT(logHas("graph registration"));
                CHILD_EXPECT(logHas("zero-copy (written into the receiver's registered buffer)"));
              }
              for (P2pRank& r : ranks) {
                if (release(r) != 0) return 1;
              }
              return 0;
            }));
}

// NCCL's rule binds the buffers of an operation, not everything a rank holds: when only the even
// ranks register a buffer, unrelated to the transfers, unregistered sends and receives of the
// zero-copy size between all ranks must take the copy path and not leave the even ranks waiting
// for odd ones that never meet them (they used to, until NCCL_BOOTSTRAP_TIMEOUT).
TEST_P(RegisterP2p, UnrelatedRegistrationsOnSomeRanksDoNotStallUnregisteredTransfers) {
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<P2pRank>(n, mode(), kWatchdogSeconds, [n](std::vector<P2pRank>& ranks) {
              std::vector<void*> unrelated(ranks.size(), nullptr);
              for (size_t i = 0; i < ranks.size(); i++) {
                P2pRank& r = ranks[i];
                if (allocate(r, n, Alloc::kCudaMalloc) != 0) return 1;
                if (r.rank % 2 != 0) continue;
                CHILD_CUDA(cudaMalloc(&unrelated[i], 1 << 20));
                CHILD_NCCL(ncclCommRegister(r.comm, unrelated[i], 1 << 20, &r.handle));
              }
              int it = 0;
              for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll}) {
                if (runAndCheck(ranks, Exchange{pattern, 0}, it++) != 0) return 1;
              }
              for (size_t i = 0; i < ranks.size(); i++) {
                P2pRank& r = ranks[i];
                if (r.handle != nullptr) CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
                CHILD_CUDA(cudaFree(unrelated[i]));
                if (release(r) != 0) return 1;
              }
              return 0;
            }));
}

// The detectable break of the rule: a pair that never met, whose sender passes a registered
// buffer and whose receiver an unregistered one. The sender waits for an exchange the receiver
// never joins; it must fail at NCCL_BOOTSTRAP_TIMEOUT with a WARN that names the rule, and both
// ranks must get out by ncclCommAbort (the receiver's copy-path kernel waits for data that never
// comes).
TEST_P(RegisterP2p, ARegisteredSendToAnUnregisteredReceiveFailsWithAWarn) {
  if (n() != 2 || mode() != Mode::kProcesses) GTEST_SKIP() << "one pair of processes shows it";
  if (colltest::againstReference()) GTEST_SKIP() << "undefined behaviour in NCCL";
  regtest::ScopedRegLog log;
  colltest::ScopedSetenv timeout("NCCL_BOOTSTRAP_TIMEOUT", "3");
  EXPECT_EQ(0, gputest::runRanksInProcesses(2, [](int rank, const ncclUniqueId& id) {
              alarm(kWatchdogSeconds);
              P2pRank r;
              r.rank = rank;
              CHILD_CUDA(cudaSetDevice(rank));
              CHILD_NCCL(ncclCommInitRank(&r.comm, 2, id, rank));
              CHILD_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
              if (regtest::allocate(r, 2, Alloc::kCudaMalloc, kCount) != 0) return 1;
              if (rank == 0) {
                CHILD_NCCL(ncclCommRegister(r.comm, r.chunk, r.chunkBytes, &r.handle));
                CHILD_EXPECT(ncclSend(r.send, kCount, ncclInt32, 1, r.comm, r.stream) != ncclSuccess);
                CHILD_EXPECT(logHas("never joined the registration exchange"));
              } else {
                CHILD_NCCL(ncclRecv(r.recv, kCount, ncclInt32, 0, r.comm, r.stream));
                sleep(6);  // the sender's exchange times out meanwhile
              }
              CHILD_NCCL(ncclCommAbort(r.comm));
              CHILD_CUDA(cudaStreamSynchronize(r.stream));
              CHILD_CUDA(cudaFree(r.chunk));
              return 0;
            }));
}

// Fresh buffers every cycle, used by an all-to-all through a local registration (then
// deregistered) or a graph registration (graph destroyed), then freed: without the peers
// unmapping released registrations, every cycle would keep a chunk of each GPU alive.
TEST_P(RegisterP2p, ReleasedRegistrationsLeaveNoMemoryBehind) {
  if (mode() == Mode::kThreads) GTEST_SKIP() << "one process per GPU and one thread cover it";
  if (colltest::againstReference()) GTEST_SKIP() << "Braid's release of peer mappings";
  regtest::ScopedRegLog log;
  const int n = this->n();
  EXPECT_EQ(0, gputest::withRanks<P2pRank>(n, mode(), kWatchdogSeconds, [n](std::vector<P2pRank>& ranks) {
              constexpr int kCycles = 30;
              constexpr int kSettled = 5;  // cycles before the first measurement
              std::vector<size_t> freeAtSettled(ranks.size());
              for (int cycle = 0; cycle < kCycles; cycle++) {
                const Alloc alloc = cycle % 2 == 0 ? Alloc::kMemAlloc : Alloc::kCudaMalloc;
                for (P2pRank& r : ranks) {
                  if (allocate(r, n, alloc) != 0) return 1;
                }
                const Exchange x{Pattern::kAllToAll, cycle % 3};
                if (cycle % 3 != 2) {
                  for (P2pRank& r : ranks) CHILD_NCCL(ncclCommRegister(r.comm, r.chunk, r.chunkBytes, &r.handle));
                  if (runAndCheck(ranks, x, cycle) != 0) return 1;
                  for (P2pRank& r : ranks) CHILD_NCCL(ncclCommDeregister(r.comm, r.handle));
                } else if (captureAndReplay(ranks, x, cycle, 1) != 0) {
                  return 1;
                }
                for (size_t i = 0; i < ranks.size(); i++) {
                  if (release(ranks[i]) != 0) return 1;
                  if (regtest::checkMemoryFlat(ranks[i], cycle, kSettled, kCycles - 1, &freeAtSettled[i]) != 0) {
                    return 1;
                  }
                }
              }
              CHILD_EXPECT(logHas("unmaps it once its earlier kernels are done"));
              return 0;
            }));
}

INSTANTIATE_TEST_SUITE_P(Gpus, RegisterP2p, regtest::gpusAndModes(), regtest::gpusAndModeName);

}  // namespace
