// One-sided operations on real GPUs: ncclPutSignal, ncclSignal, ncclWaitSignal. One rank (any
// machine with a GPU): puts to itself on several contexts and signal indices, every misuse refused
// without touching memory, a window that a pending put uses cannot be deregistered. Every GPU
// (threads, processes, one thread for all): each rank puts many chunks of random sizes into every
// peer's window, then one signal per (context, signal index); waits; exact compares, gaps still
// poisoned. The same inside CUDA graphs, replayed with new data, also after the windows were
// deregistered (the graphs keep them mapped).
#include <gtest/gtest.h>

#include <vector>

#include "window_test_util.h"

namespace {

using wintest::Mode;
using wintest::Rank;

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kCtx = 3;
constexpr int kSig = 2;

ncclConfig_t rmaConfig(int nCtx, int nSig) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.numRmaCtx = nCtx;
  c.numRmaSig = nSig;
  return c;
}

// ---- One rank ---------------------------------------------------------------------------------

struct SelfBuffers {
  char* src = nullptr;  // window with NCCL_WIN_COLL_SYMMETRIC
  char* dst = nullptr;  // window without it (a target may be any window)
  ncclWindow_t srcWin = nullptr;
  ncclWindow_t dstWin = nullptr;
  size_t size = 4 * kMiB;
};

int makeSelfBuffers(Rank& r, SelfBuffers* b) {
  CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&b->src), b->size));
  CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&b->dst), b->size));
  CHILD_NCCL(ncclCommWindowRegister(r.comm, b->src, b->size, &b->srcWin, NCCL_WIN_COLL_SYMMETRIC));
  CHILD_NCCL(ncclCommWindowRegister(r.comm, b->dst, b->size, &b->dstWin, 0));
  std::vector<uint8_t> in = wintest::pattern(5, 0, 0, b->size);
  CHILD_CUDA(gputest::uploadSync(b->src, in.data(), b->size));
  CHILD_CUDA(gputest::poisonSync(b->dst, wintest::kPoison, b->size));
  return 0;
}

// Chunk (ctx, sig) of the self test: its place in both buffers and its size.
size_t selfOffset(int ctx, int sig) { return static_cast<size_t>(ctx * kSig + sig) * 600 * 1024 + 4096 * ctx; }
size_t selfBytes(int ctx, int sig) { return 300 * 1024 + 4 * static_cast<size_t>(ctx * 7 + sig * 3) + 1; }

int expectSelfResult(const SelfBuffers& b) {
  std::vector<uint8_t> got(b.size);
  CHILD_CUDA(cudaMemcpy(got.data(), b.dst, b.size, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> expected(b.size, wintest::kPoison);
  for (int c = 0; c < kCtx; c++) {
    for (int s = 0; s < kSig; s++) {
      for (size_t i = 0; i < selfBytes(c, s); i++)
        expected[selfOffset(c, s) + i] = wintest::byteOf(5, 0, selfOffset(c, s) + i);
    }
  }
  for (size_t i = 0; i < b.size; i++) {
    if (got[i] != expected[i]) {
      std::fprintf(stderr, "self puts: byte %zu is 0x%02x, expected 0x%02x\n", i, got[i], expected[i]);
      return 1;
    }
  }
  return 0;
}

// Every (ctx, sig): a put of its chunk, then a signal; one wait for all of them (two each).
int selfPuts(Rank& r, const SelfBuffers& b) {
  std::vector<ncclWaitSignalDesc_t> descs;
  for (int c = 0; c < kCtx; c++) {
    for (int s = 0; s < kSig; s++) {
      const size_t off = selfOffset(c, s);
      CHILD_NCCL(ncclPutSignal(b.src + off, selfBytes(c, s), ncclUint8, 0, b.dstWin, off, s, c, 0, r.comm, r.stream));
      CHILD_NCCL(ncclSignal(0, s, c, 0, r.comm, r.stream));
      descs.push_back(ncclWaitSignalDesc_t{2, 0, s, c});
    }
  }
  CHILD_NCCL(ncclWaitSignal(static_cast<int>(descs.size()), descs.data(), r.comm, r.stream));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  return expectSelfResult(b);
}

// Every misuse: ncclInvalidArgument, and the destination untouched (checked by the caller).
int selfMisuse(Rank& r, const SelfBuffers& b) {
  const ncclComm_t c = r.comm;
  const cudaStream_t st = r.stream;
  auto put = [&](const void* src, size_t n, ncclDataType_t t, int peer, ncclWindow_t w, size_t off, int sig, int ctx,
                 unsigned flags) { return ncclPutSignal(src, n, t, peer, w, off, sig, ctx, flags, c, st); };
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, b.dstWin, 0, 0, kCtx, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, b.dstWin, 0, 0, -1, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, b.dstWin, 0, kSig, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, b.dstWin, 0, 0, 0, 1) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 1, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, -1, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, b.dstWin, b.size - 15, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 4, ncclInt32, 0, b.dstWin, b.size - 15, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 1, ncclInt8, 0, b.dstWin, b.size, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, SIZE_MAX / 2, ncclInt32, 0, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclNumTypes, 0, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(nullptr, 16, ncclInt8, 0, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.dst, 16, ncclInt8, 0, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);  // not COLL_SYMMETRIC
  CHILD_EXPECT(put(b.src + b.size - 8, 16, ncclInt8, 0, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, nullptr, 0, 0, 0, 0) == ncclInvalidArgument);
  int notAWindow = 0;
  CHILD_EXPECT(put(b.src, 16, ncclInt8, 0, reinterpret_cast<ncclWindow_t>(&notAWindow), 0, 0, 0, 0) ==
               ncclInvalidArgument);
  void* plain = nullptr;
  CHILD_CUDA(cudaMalloc(&plain, 4096));
  CHILD_EXPECT(put(plain, 16, ncclInt8, 0, b.dstWin, 0, 0, 0, 0) == ncclInvalidArgument);  // in no window
  CHILD_CUDA(cudaFree(plain));
  CHILD_EXPECT(ncclSignal(0, 0, kCtx, 0, c, st) == ncclInvalidArgument);
  CHILD_EXPECT(ncclSignal(0, kSig, 0, 0, c, st) == ncclInvalidArgument);
  CHILD_EXPECT(ncclSignal(1, 0, 0, 0, c, st) == ncclInvalidArgument);
  CHILD_EXPECT(ncclSignal(0, 0, 0, 2, c, st) == ncclInvalidArgument);
  ncclWaitSignalDesc_t bad[] = {{0, 0, 0, 0}, {-1, 0, 0, 0}, {1, 1, 0, 0}, {1, 0, kSig, 0}, {1, 0, 0, kCtx}};
  for (ncclWaitSignalDesc_t& d : bad) CHILD_EXPECT(ncclWaitSignal(1, &d, c, st) == ncclInvalidArgument);
  CHILD_EXPECT(ncclWaitSignal(0, bad, c, st) == ncclInvalidArgument);
  CHILD_EXPECT(ncclWaitSignal(1, nullptr, c, st) == ncclInvalidArgument);
  CHILD_CUDA(cudaStreamSynchronize(st));
  return 0;
}

// A put queued behind a wait that has not been satisfied keeps its windows: deregistering one is
// refused until the stream has moved on.
int pendingDeregister(Rank& r, SelfBuffers& b) {
  cudaStream_t other = nullptr;
  CHILD_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  ncclWaitSignalDesc_t d{1, 0, 1, 2};
  CHILD_NCCL(ncclWaitSignal(1, &d, r.comm, r.stream));  // nobody has signalled (ctx 2, sig 1) yet
  CHILD_NCCL(ncclPutSignal(b.src, 64, ncclInt8, 0, b.dstWin, 0, 0, 0, 0, r.comm, r.stream));
  CHILD_EXPECT(ncclCommWindowDeregister(r.comm, b.dstWin) == ncclInvalidUsage);
  CHILD_EXPECT(ncclCommWindowDeregister(r.comm, b.srcWin) == ncclInvalidUsage);
  CHILD_NCCL(ncclSignal(0, 1, 2, 0, r.comm, other));  // releases the wait
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  ncclWaitSignalDesc_t put{1, 0, 0, 0};  // the put's own signal
  CHILD_NCCL(ncclWaitSignal(1, &put, r.comm, other));
  CHILD_CUDA(cudaStreamSynchronize(other));
  CHILD_CUDA(cudaStreamDestroy(other));
  return 0;
}

TEST(Rma, OneRankSelfPutsContextsSignalsAndMisuse) {
  EXPECT_EQ(0, wintest::withConfig(1, Mode::kThreads, rmaConfig(kCtx, kSig), [](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              CHILD_EXPECT(ncclSignal(0, 0, 0, 0, r.comm, r.stream) == ncclInvalidUsage);  // no window yet
              SelfBuffers b;
              if (makeSelfBuffers(r, &b) != 0 || selfPuts(r, b) != 0) return 1;
              if (selfMisuse(r, b) != 0 || expectSelfResult(b) != 0) return 1;
              CHILD_CUDA(gputest::poisonSync(b.dst, wintest::kPoison, b.size));
              if (selfPuts(r, b) != 0) return 1;  // the counts carry on
              if (pendingDeregister(r, b) != 0) return 1;
              CHILD_NCCL(ncclCommWindowDeregister(r.comm, b.dstWin));
              CHILD_NCCL(ncclCommWindowDeregister(r.comm, b.srcWin));
              CHILD_NCCL(ncclMemFree(b.src));
              CHILD_NCCL(ncclMemFree(b.dst));
              return 0;
            }));
}

TEST(Rma, NoContextsMeansNoOneSidedOperations) {
  EXPECT_EQ(
      0, wintest::withConfig(1, Mode::kThreads, rmaConfig(0, 1), [](std::vector<Rank>& ranks) {
        Rank& r = ranks[0];
        CHILD_EXPECT(!wintest::properties(r.comm).hostRmaSupport);
        SelfBuffers b;
        if (makeSelfBuffers(r, &b) != 0) return 1;  // windows still work
        CHILD_EXPECT(ncclPutSignal(b.src, 16, ncclInt8, 0, b.dstWin, 0, 0, 0, 0, r.comm, r.stream) == ncclInvalidUsage);
        CHILD_EXPECT(ncclSignal(0, 0, 0, 0, r.comm, r.stream) == ncclInvalidUsage);
        CHILD_NCCL(ncclCommWindowDeregister(r.comm, b.dstWin));
        CHILD_NCCL(ncclCommWindowDeregister(r.comm, b.srcWin));
        CHILD_NCCL(ncclMemFree(b.src));
        CHILD_NCCL(ncclMemFree(b.dst));
        return 0;
      }));
}

// ---- Every GPU --------------------------------------------------------------------------------

// Rank s's outbox region d (kRegion bytes at d * kRegion) holds what s puts into rank d's inbox
// region s, chunk by chunk at the same offsets; byte i of s's outbox is byteOf(data seed, s, i).
constexpr size_t kRegion = 4 * kMiB;
constexpr int kChunks = 12;

struct Chunk {
  size_t offset;
  size_t bytes;
  int ctx;
  int sig;
  bool int32;  // put as int32 elements (offset and size multiples of 4)
};

std::vector<Chunk> chunksOf(int s, int d) {
  std::vector<Chunk> chunks;
  size_t at = 0;
  for (int k = 0; k < kChunks; k++) {
    const uint64_t h = colltest::inputHash(77, s * 1000 + d, k);
    Chunk c{};
    c.int32 = (h >> 40) % 3 == 0;
    c.bytes = h % 11 == 0 ? 0 : 1 + (h >> 8) % (300 * 1024);
    at += (h >> 30) % 5000;
    if (c.int32) {
      at = (at + 3) / 4 * 4;
      c.bytes = c.bytes / 4 * 4;
    }
    c.offset = at;
    c.ctx = static_cast<int>((h >> 50) % kCtx);
    c.sig = static_cast<int>((h >> 55) % kSig);
    at += c.bytes;
    chunks.push_back(c);
  }
  return chunks;
}

struct Boxes {
  std::vector<void*> outbox, inbox;
  std::vector<ncclWindow_t> outWin, inWin;
};

// Windows over every rank's outbox (the source of puts: NCCL_WIN_COLL_SYMMETRIC) and inbox.
int makeBoxesOver(std::vector<Rank>& ranks, int n, Boxes* b) {
  std::vector<size_t> sizes(ranks.size(), kRegion * n);
  if (wintest::registerAll(ranks, b->outbox, sizes, NCCL_WIN_COLL_SYMMETRIC, &b->outWin) != 0) return 1;
  return wintest::registerAll(ranks, b->inbox, sizes, 0, &b->inWin);
}

int makeBoxes(std::vector<Rank>& ranks, int n, Boxes* b) {
  b->outbox.resize(ranks.size());
  b->inbox.resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_NCCL(ncclMemAlloc(&b->outbox[i], kRegion * n));
    CHILD_NCCL(ncclMemAlloc(&b->inbox[i], kRegion * n));
  }
  return makeBoxesOver(ranks, n, b);
}

// New data in every outbox, poison in every inbox, then a barrier: nobody puts into an inbox
// before it is poisoned.
int refill(std::vector<Rank>& ranks, int n, const Boxes& b, uint64_t seed) {
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    std::vector<uint8_t> out = wintest::pattern(seed, ranks[i].rank, 0, kRegion * n);
    CHILD_CUDA(gputest::uploadSync(b.outbox[i], out.data(), out.size()));
    CHILD_CUDA(gputest::poisonSync(b.inbox[i], wintest::kPoison, kRegion * n));
  }
  return wintest::barrier(ranks);
}

// Rank r's puts (every chunk to every peer, peers in a rank-dependent order), one signal per
// (peer, ctx, sig), and its wait for everything addressed to it.
int enqueueExchange(Rank& r, int n, const Boxes& b, size_t i) {
  std::vector<std::vector<Chunk>> to(n);
  for (int d = 0; d < n; d++) to[d] = chunksOf(r.rank, d);
  const char* out = static_cast<const char*>(b.outbox[i]);
  for (int k = 0; k < kChunks; k++) {
    for (int j = 0; j < n; j++) {
      const int d = (r.rank + j) % n;
      const Chunk& c = to[d][k];
      const size_t count = c.int32 ? c.bytes / 4 : c.bytes;
      CHILD_NCCL(ncclPutSignal(out + d * kRegion + c.offset, count, c.int32 ? ncclInt32 : ncclInt8, d, b.inWin[i],
                               r.rank * kRegion + c.offset, c.sig, c.ctx, 0, r.comm, r.stream));
    }
  }
  std::vector<ncclWaitSignalDesc_t> descs;
  for (int p = 0; p < n; p++) {
    const std::vector<Chunk> from = chunksOf(p, r.rank);
    for (int ctx = 0; ctx < kCtx; ctx++) {
      for (int sig = 0; sig < kSig; sig++) {
        CHILD_NCCL(ncclSignal(p, sig, ctx, 0, r.comm, r.stream));
        int count = 1;  // the signal alone
        for (const Chunk& c : from) count += c.ctx == ctx && c.sig == sig ? 1 : 0;
        descs.push_back(ncclWaitSignalDesc_t{count, p, sig, ctx});
      }
    }
  }
  CHILD_NCCL(ncclWaitSignal(static_cast<int>(descs.size()), descs.data(), r.comm, r.stream));
  return 0;
}

// Rank r's inbox: every chunk from every peer, poison in between.
int verifyInbox(const Rank& r, int n, const Boxes& b, size_t i, uint64_t seed) {
  std::vector<uint8_t> got(kRegion * n);
  CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(r.rank)));
  CHILD_CUDA(cudaMemcpy(got.data(), b.inbox[i], got.size(), cudaMemcpyDeviceToHost));
  for (int s = 0; s < n; s++) {
    std::vector<uint8_t> expected(kRegion, wintest::kPoison);
    for (const Chunk& c : chunksOf(s, r.rank)) {
      for (size_t k = 0; k < c.bytes; k++)
        expected[c.offset + k] = wintest::byteOf(seed, s, r.rank * kRegion + c.offset + k);
    }
    for (size_t k = 0; k < kRegion; k++) {
      if (got[s * kRegion + k] != expected[k]) {
        std::fprintf(stderr, "rank %d: byte %zu of the region from rank %d is 0x%02x, expected 0x%02x (seed %llu)\n",
                     r.rank, k, s, got[s * kRegion + k], expected[k], static_cast<unsigned long long>(seed));
        return 1;
      }
    }
  }
  return 0;
}

int eagerRounds(std::vector<Rank>& ranks, int n, const Boxes& b) {
  for (uint64_t seed = 100; seed < 103; seed++) {
    if (refill(ranks, n, b, seed) != 0) return 1;
    for (size_t i = 0; i < ranks.size(); i++) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
      if (enqueueExchange(ranks[i], n, b, i) != 0) return 1;
    }
    for (size_t i = 0; i < ranks.size(); i++) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
      CHILD_CUDA(cudaStreamSynchronize(ranks[i].stream));
      if (verifyInbox(ranks[i], n, b, i, seed) != 0) return 1;
    }
  }
  return 0;
}

// Captures the exchange on every rank, replays it with new data; before the last replay every
// window is deregistered (the graphs keep them mapped until they are destroyed).
int graphRounds(std::vector<Rank>& ranks, int n, Boxes& b) {
  std::vector<cudaGraphExec_t> execs(ranks.size());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_CUDA(cudaStreamBeginCapture(ranks[i].stream, cudaStreamCaptureModeThreadLocal));
    if (enqueueExchange(ranks[i], n, b, i) != 0) return 1;
    cudaGraph_t graph = nullptr;
    CHILD_CUDA(cudaStreamEndCapture(ranks[i].stream, &graph));
    CHILD_CUDA(cudaGraphInstantiate(&execs[i], graph, 0));
    CHILD_CUDA(cudaGraphDestroy(graph));
  }
  for (uint64_t seed = 200; seed < 204; seed++) {
    if (seed == 203) {
      if (wintest::deregisterAll(ranks, b.outWin) != 0 || wintest::deregisterAll(ranks, b.inWin) != 0) return 1;
    }
    if (refill(ranks, n, b, seed) != 0) return 1;
    for (size_t i = 0; i < ranks.size(); i++) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
      CHILD_CUDA(cudaGraphLaunch(execs[i], ranks[i].stream));
    }
    for (size_t i = 0; i < ranks.size(); i++) {
      CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
      CHILD_CUDA(cudaStreamSynchronize(ranks[i].stream));
      if (verifyInbox(ranks[i], n, b, i, seed) != 0) return 1;
    }
  }
  for (cudaGraphExec_t exec : execs) CHILD_CUDA(cudaGraphExecDestroy(exec));
  return 0;
}

class RmaAllGpus : public ::testing::TestWithParam<Mode> {};

TEST_P(RmaAllGpus, ManyPutsOfRandomSizesThenOneSignalPerContext) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, wintest::withConfig(n, GetParam(), rmaConfig(kCtx, kSig), [n](std::vector<Rank>& ranks) {
              Boxes b;
              if (makeBoxes(ranks, n, &b) != 0 || eagerRounds(ranks, n, b) != 0) return 1;
              if (wintest::barrier(ranks) != 0) return 1;  // every peer is done with this rank's windows
              if (wintest::deregisterAll(ranks, b.outWin) != 0 || wintest::deregisterAll(ranks, b.inWin) != 0) return 1;
              for (size_t i = 0; i < ranks.size(); i++) {
                CHILD_NCCL(ncclMemFree(b.outbox[i]));
                CHILD_NCCL(ncclMemFree(b.inbox[i]));
              }
              return 0;
            }));
}

TEST_P(RmaAllGpus, InsideCudaGraphsReplayedThenEagerAgain) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, wintest::withConfig(n, GetParam(), rmaConfig(kCtx, kSig), [n](std::vector<Rank>& ranks) {
              Boxes b;
              if (makeBoxes(ranks, n, &b) != 0 || graphRounds(ranks, n, b) != 0) return 1;
              if (wintest::barrier(ranks) != 0) return 1;
              // Fresh windows over the same memory: eager traffic after graph traffic.
              if (makeBoxesOver(ranks, n, &b) != 0 || eagerRounds(ranks, n, b) != 0) return 1;
              if (wintest::barrier(ranks) != 0) return 1;
              if (wintest::deregisterAll(ranks, b.outWin) != 0 || wintest::deregisterAll(ranks, b.inWin) != 0) return 1;
              for (size_t i = 0; i < ranks.size(); i++) {
                CHILD_NCCL(ncclMemFree(b.outbox[i]));
                CHILD_NCCL(ncclMemFree(b.inbox[i]));
              }
              return 0;
            }));
}

INSTANTIATE_TEST_SUITE_P(Modes, RmaAllGpus, ::testing::Values(Mode::kThreads, Mode::kProcesses, Mode::kOneThread),
                         [](const ::testing::TestParamInfo<Mode>& p) { return wintest::modeTestName(p.param); });

}  // namespace
