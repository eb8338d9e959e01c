// Symmetric memory windows on real GPUs: ncclCommWindowRegister / Deregister, ncclWinGetUserPtr and
// the pointer lookups of nccl_device/host.h. One rank (any machine with a GPU): aliases of the
// user's memory, every misuse refused with the code NCCL gives, 1,000 register/deregister cycles
// with flat device memory. Every GPU (threads, processes, one thread for all): each rank reads every
// peer's data through the flat mapping, with different window sizes per rank. Emulated hosts
// (NCCL_HOSTID): peers on another host have no pointer, and one-sided operations reach them over the
// network.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "window_test_util.h"

namespace {

using wintest::Mode;
using wintest::Rank;

constexpr size_t kMiB = size_t{1} << 20;

// One rank: the window's flat pointer aliases the user's buffer, both ways.
int aliasesOneRank(Rank& r, char* buf, size_t size, ncclWindow_t win) {
  void* user = nullptr;
  CHILD_NCCL(ncclWinGetUserPtr(r.comm, win, &user));
  CHILD_EXPECT(user == buf);
  void* lsa = nullptr;
  void* peer = nullptr;
  CHILD_NCCL(ncclGetLsaDevicePointer(win, 0, 0, &lsa));
  CHILD_NCCL(ncclGetPeerDevicePointer(win, 0, 0, &peer));
  CHILD_EXPECT(lsa != nullptr && lsa == peer && lsa != buf);
  std::vector<uint8_t> in = wintest::pattern(1, 0, 0, size);
  CHILD_CUDA(gputest::uploadSync(buf, in.data(), size));
  if (wintest::expectBytes(lsa, in, "read through the flat mapping", 0) != 0) return 1;
  void* last = nullptr;
  CHILD_NCCL(ncclGetLsaDevicePointer(win, size - 1, 0, &last));
  CHILD_EXPECT(static_cast<char*>(last) == static_cast<char*>(lsa) + size - 1);
  std::vector<uint8_t> back = wintest::pattern(2, 0, 0, size);
  CHILD_CUDA(gputest::uploadSync(lsa, back.data(), size));
  if (wintest::expectBytes(buf, back, "written through the flat mapping", 0) != 0) return 1;
  void* mc = reinterpret_cast<void*>(1);
  CHILD_NCCL(ncclGetLsaMultimemDevicePointer(win, 0, &mc));
  CHILD_EXPECT(mc == nullptr);
  return 0;
}

// Lookups outside the window, the team or the communicator: ncclInvalidArgument, nothing written.
int badLookupsOneRank(ncclWindow_t win, size_t size) {
  void* p = nullptr;
  CHILD_EXPECT(ncclGetLsaDevicePointer(win, size, 0, &p) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetLsaDevicePointer(win, 0, 1, &p) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetLsaDevicePointer(win, 0, -1, &p) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetPeerDevicePointer(win, 0, 1, &p) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetPeerDevicePointer(win, size, 0, &p) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetLsaDevicePointer(win, 0, 0, nullptr) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetLsaDevicePointer(nullptr, 0, 0, &p) == ncclInvalidArgument);
  int notAWindow = 0;
  CHILD_EXPECT(ncclGetLsaDevicePointer(reinterpret_cast<ncclWindow_t>(&notAWindow), 0, 0, &p) == ncclInvalidArgument);
  return 0;
}

// Every misuse of registration on one rank: the code NCCL returns, and the communicator still
// registers a good window afterwards.
int misuseOneRank(Rank& r, char* buf, size_t allocSize) {
  ncclWindow_t w = nullptr;
  void* plain = nullptr;
  CHILD_CUDA(cudaMalloc(&plain, kMiB));
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, plain, kMiB, &w, NCCL_WIN_COLL_SYMMETRIC) == ncclInvalidArgument);
  CHILD_EXPECT(w == nullptr);
  CHILD_CUDA(cudaFree(plain));
  std::vector<char> host(kMiB);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, host.data(), kMiB, &w, 0) == ncclInvalidArgument);
  void* pinned = nullptr;
  CHILD_CUDA(cudaHostAlloc(&pinned, kMiB, cudaHostAllocDefault));
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, pinned, kMiB, &w, 0) == ncclInvalidArgument);
  CHILD_CUDA(cudaFreeHost(pinned));
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf + 100, kMiB, &w, 0) == ncclInvalidArgument);  // not 4 KiB-aligned
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf, 0, &w, 0) == ncclInvalidArgument);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, nullptr, kMiB, &w, 0) == ncclInvalidArgument);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf, kMiB, nullptr, 0) == ncclInvalidArgument);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf, kMiB, &w, 0x40) == ncclInvalidArgument);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf, kMiB, &w, NCCL_WIN_GIN_ONLY) == ncclInvalidUsage);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf, kMiB, &w, NCCL_WIN_CFT_COUNTED) == ncclInvalidUsage);
  CHILD_EXPECT(ncclCommWindowRegister(r.comm, buf, allocSize + 1, &w, 0) == ncclInvalidUsage);  // past its allocation
  CHILD_EXPECT(w == nullptr);
  // After all that, a good registration (of a window 12 KiB into the allocation) still works.
  const size_t off = 3 * 4096;
  CHILD_NCCL(ncclCommWindowRegister(r.comm, buf + off, kMiB, &w, NCCL_WIN_STRICT_ORDERING));
  void* user = nullptr;
  CHILD_NCCL(ncclWinGetUserPtr(r.comm, w, &user));
  CHILD_EXPECT(user == buf + off);
  void* lsa = nullptr;
  CHILD_NCCL(ncclGetLsaDevicePointer(w, 0, 0, &lsa));
  std::vector<uint8_t> in = wintest::pattern(3, 0, 0, kMiB);
  CHILD_CUDA(gputest::uploadSync(buf + off, in.data(), kMiB));
  if (wintest::expectBytes(lsa, in, "window inside its allocation", 0) != 0) return 1;
  CHILD_NCCL(ncclCommWindowDeregister(r.comm, w));
  CHILD_EXPECT(ncclCommWindowDeregister(r.comm, w) == ncclInvalidArgument);
  CHILD_EXPECT(ncclGetLsaDevicePointer(w, 0, 0, &lsa) == ncclInvalidArgument);
  CHILD_EXPECT(ncclWinGetUserPtr(r.comm, w, &user) == ncclInvalidArgument);
  CHILD_NCCL(ncclCommWindowDeregister(r.comm, nullptr));
  return 0;
}

TEST(Window, OneRankAliasesLookupsAndMisuse) {
  EXPECT_EQ(0, wintest::withRanks(1, Mode::kThreads, [](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              ncclCommProperties_t props = wintest::properties(r.comm);
              CHILD_EXPECT(props.nRanks == 1 && props.nLsaTeams == 1);
              CHILD_EXPECT(props.hostRmaSupport);
              CHILD_EXPECT(!props.multimemSupport);
              const size_t allocSize = 4 * kMiB, size = 3 * kMiB + 5;
              char* buf = nullptr;
              CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&buf), allocSize));
              ncclWindow_t win = nullptr;
              CHILD_NCCL(ncclCommWindowRegister(r.comm, buf, size, &win, NCCL_WIN_COLL_SYMMETRIC));
              CHILD_EXPECT(win != nullptr);
              if (aliasesOneRank(r, buf, size, win) != 0 || badLookupsOneRank(win, size) != 0) return 1;
              if (misuseOneRank(r, buf, allocSize) != 0) return 1;
              // A second window over the same memory, registered while the first is live.
              ncclWindow_t again = nullptr;
              CHILD_NCCL(ncclCommWindowRegister(r.comm, buf, kMiB, &again, 0));
              CHILD_EXPECT(again != win);
              CHILD_NCCL(ncclCommWindowDeregister(r.comm, again));
              CHILD_NCCL(ncclCommWindowDeregister(r.comm, win));
              CHILD_EXPECT(wintest::properties(r.comm).hostRmaSupport);
              CHILD_NCCL(ncclMemFree(buf));
              return 0;
            }));
}

// 1,000 register/deregister cycles, with lookups and a put/signal/wait to self every tenth: device
// memory is the same after 100 cycles and after 1,000 (nothing grows per cycle), and within 2 MiB
// of before the first (after one cycle that made what lives as long as the communicator).
TEST(Window, ThousandCyclesLeaveDeviceMemoryFlat) {
  EXPECT_EQ(0, wintest::withRanks(1, Mode::kThreads, [](std::vector<Rank>& ranks) {
              Rank& r = ranks[0];
              const size_t size = 2 * kMiB;
              char* buf = nullptr;
              CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&buf), size));
              // A first cycle makes what lives as long as the communicator (signal memory, struct slab).
              ncclWindow_t first = nullptr;
              CHILD_NCCL(ncclCommWindowRegister(r.comm, buf, size, &first, NCCL_WIN_COLL_SYMMETRIC));
              CHILD_NCCL(ncclCommWindowDeregister(r.comm, first));
              size_t freeStart = 0, free100 = 0, freeEnd = 0, total = 0;
              CHILD_CUDA(cudaMemGetInfo(&freeStart, &total));
              for (int cycle = 1; cycle <= 1000; cycle++) {
                ncclWindow_t win = nullptr;
                CHILD_NCCL(ncclCommWindowRegister(r.comm, buf, size, &win, NCCL_WIN_COLL_SYMMETRIC));
                void* p = nullptr;
                CHILD_NCCL(ncclGetPeerDevicePointer(win, size - 1, 0, &p));
                CHILD_EXPECT(p != nullptr);
                if (cycle % 10 == 0) {
                  CHILD_NCCL(ncclPutSignal(buf, kMiB, ncclInt8, 0, win, kMiB, 0, 0, 0, r.comm, r.stream));
                  ncclWaitSignalDesc_t d{1, 0, 0, 0};
                  CHILD_NCCL(ncclWaitSignal(1, &d, r.comm, r.stream));
                  CHILD_CUDA(cudaStreamSynchronize(r.stream));
                }
                CHILD_NCCL(ncclCommWindowDeregister(r.comm, win));
                if (cycle == 100) CHILD_CUDA(cudaMemGetInfo(&free100, &total));
              }
              CHILD_CUDA(cudaMemGetInfo(&freeEnd, &total));
              std::fprintf(stderr, "free device memory: %zu before, %zu after 100 cycles, %zu after 1000\n", freeStart,
                           free100, freeEnd);
              CHILD_EXPECT(freeEnd == free100);
              CHILD_EXPECT(freeEnd + 2 * kMiB >= freeStart);
              CHILD_NCCL(ncclMemFree(buf));
              return 0;
            }));
}

// Every GPU: rank r's window of sizeOf(r) bytes, 64 KiB into its allocation, holds pattern(seed, r).
size_t sizeOf(int rank) { return 3 * kMiB + 4099 * static_cast<size_t>(rank + 1); }

int readEveryPeer(std::vector<Rank>& ranks, int nranks, int flags) {
  const size_t off = 64 * 1024;
  const uint64_t seed = 11 + static_cast<uint64_t>(flags);
  std::vector<void*> allocs(ranks.size()), buffs(ranks.size());
  std::vector<size_t> sizes(ranks.size());
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_NCCL(ncclMemAlloc(&allocs[i], off + sizeOf(ranks[i].rank)));
    buffs[i] = static_cast<char*>(allocs[i]) + off;
    sizes[i] = sizeOf(ranks[i].rank);
    std::vector<uint8_t> in = wintest::pattern(seed, ranks[i].rank, 0, sizes[i]);
    CHILD_CUDA(gputest::uploadSync(buffs[i], in.data(), sizes[i]));
  }
  std::vector<ncclWindow_t> wins;
  if (wintest::registerAll(ranks, buffs, sizes, flags, &wins) != 0) return 1;
  for (size_t i = 0; i < ranks.size(); i++) {
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(ranks[i].rank)));
    CHILD_EXPECT(wintest::properties(ranks[i].comm).nLsaTeams == 1);
    for (int peer = 0; peer < nranks; peer++) {
      void* p = nullptr;
      void* q = nullptr;
      CHILD_NCCL(ncclGetPeerDevicePointer(wins[i], 0, peer, &p));
      CHILD_NCCL(ncclGetLsaDevicePointer(wins[i], 0, peer, &q));
      CHILD_EXPECT(p != nullptr && p == q);
      if (wintest::expectBytes(p, wintest::pattern(seed, peer, 0, sizeOf(peer)), "peer's window", ranks[i].rank) != 0) {
        return 1;
      }
      // Offsets are checked against that peer's own window size.
      CHILD_EXPECT(ncclGetPeerDevicePointer(wins[i], sizeOf(peer), peer, &p) == ncclInvalidArgument);
      CHILD_NCCL(ncclGetPeerDevicePointer(wins[i], sizeOf(peer) - 1, peer, &p));
    }
  }
  if (wintest::deregisterAll(ranks, wins) != 0) return 1;
  for (size_t i = 0; i < ranks.size(); i++) CHILD_NCCL(ncclMemFree(allocs[i]));
  return 0;
}

class WindowAllGpus : public ::testing::TestWithParam<Mode> {};

TEST_P(WindowAllGpus, EveryRankReadsEveryPeerThroughTheFlatRange) {
  const int n = gputest::allGpuRanks();
  EXPECT_EQ(0, wintest::withRanks(n, GetParam(), [n](std::vector<Rank>& ranks) {
              return readEveryPeer(ranks, n, NCCL_WIN_COLL_SYMMETRIC) | readEveryPeer(ranks, n, 0);
            }));
}

INSTANTIATE_TEST_SUITE_P(Modes, WindowAllGpus, ::testing::Values(Mode::kThreads, Mode::kProcesses, Mode::kOneThread),
                         [](const ::testing::TestParamInfo<Mode>& p) { return wintest::modeTestName(p.param); });

// In a CUDA graph: every replay puts to the rank of the next host and waits for the previous host's;
// then many more graphs captured and destroyed than the communicator has slots for.
int graphAcrossHosts(std::vector<Rank>& ranks, int nranks, int perHost, char* src, char* buf, ncclWindow_t win,
                     size_t place, size_t bytes) {
  Rank& r = ranks[0];
  const int to = (r.rank + perHost) % nranks, from = (r.rank - perHost + nranks) % nranks;
  cudaStream_t capture = nullptr;
  CHILD_CUDA(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  CHILD_CUDA(cudaStreamBeginCapture(capture, cudaStreamCaptureModeRelaxed));
  CHILD_NCCL(ncclPutSignal(src + r.rank * place, bytes, ncclInt8, to, win, r.rank * place, 0, 0, 0, r.comm, capture));
  ncclWaitSignalDesc_t wait{1, from, 0, 0};
  CHILD_NCCL(ncclWaitSignal(1, &wait, r.comm, capture));
  cudaGraph_t graph = nullptr;
  CHILD_CUDA(cudaStreamEndCapture(capture, &graph));
  cudaGraphExec_t exec = nullptr;
  CHILD_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  const std::vector<uint8_t> want = wintest::pattern(21, from, from * place, bytes);
  for (int replay = 0; replay < 3; replay++) {
    if (wintest::barrier(ranks) != 0) return 1;  // every rank checked the last replay
    CHILD_CUDA(gputest::poisonSync(buf + from * place, 0x11 + replay, bytes));
    if (wintest::barrier(ranks) != 0) return 1;  // every window poisoned before any put
    CHILD_CUDA(cudaGraphLaunch(exec, capture));
    CHILD_CUDA(cudaStreamSynchronize(capture));
    if (wintest::expectBytes(buf + from * place, want, "put from another host's graph", r.rank) != 0) return 1;
  }
  CHILD_CUDA(cudaGraphExecDestroy(exec));
  CHILD_CUDA(cudaGraphDestroy(graph));
  // A destroyed graph gives its slot back: more captures than a communicator has slots for all work.
  for (int i = 0; i < 5000; i++) {
    CHILD_CUDA(cudaStreamBeginCapture(capture, cudaStreamCaptureModeRelaxed));
    const ncclResult_t captured = ncclSignal(to, 0, 0, 0, r.comm, capture);
    CHILD_CUDA(cudaStreamEndCapture(capture, &graph));
    CHILD_CUDA(cudaGraphDestroy(graph));
    CHILD_NCCL(captured);
  }
  CHILD_CUDA(cudaStreamDestroy(capture));
  return 0;
}

// Ranks on emulated hosts of perHost ranks: pointers to peers of this host only (the other hosts'
// ranks get NULL), one-sided operations to every rank: through the mapped windows within the host,
// through the network to the others. Every rank puts a block of several network chunks and an odd
// size into each peer's window at its own place, then one signal alone; each waits for two signals
// from every peer and checks every block exactly; then the same across hosts from a CUDA graph,
// replayed. Misuse is refused whatever the host: a range past a remote peer's window.
int acrossHosts(std::vector<Rank>& ranks, int nranks, int perHost) {
  Rank& r = ranks[0];
  const size_t size = 8 * kMiB, place = size / nranks, bytes = place / 2 + 17;
  char* buf = nullptr;
  char* src = nullptr;
  CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&buf), size));
  CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&src), size));
  std::vector<uint8_t> in = wintest::pattern(21, r.rank, 0, size);
  CHILD_CUDA(gputest::uploadSync(src, in.data(), size));
  CHILD_CUDA(gputest::poisonSync(buf, 0x5c, size));
  ncclWindow_t win = nullptr, srcWin = nullptr;
  CHILD_NCCL(ncclCommWindowRegister(r.comm, buf, size, &win, NCCL_WIN_COLL_SYMMETRIC));
  CHILD_NCCL(ncclCommWindowRegister(r.comm, src, size, &srcWin, NCCL_WIN_COLL_SYMMETRIC));
  ncclCommProperties_t props = wintest::properties(r.comm);
  CHILD_EXPECT(props.nLsaTeams == nranks / perHost);
  CHILD_EXPECT(props.hostRmaSupport);
  const int first = r.rank / perHost * perHost;
  std::vector<ncclWaitSignalDesc_t> waits;
  for (int peer = 0; peer < nranks; peer++) {
    const bool local = peer >= first && peer < first + perHost;
    void* p = reinterpret_cast<void*>(1);
    CHILD_NCCL(ncclGetPeerDevicePointer(win, 0, peer, &p));
    CHILD_EXPECT((p != nullptr) == local);
    if (peer == r.rank) continue;
    CHILD_NCCL(
        ncclPutSignal(src + r.rank * place, bytes, ncclInt8, peer, win, r.rank * place, 0, 0, 0, r.comm, r.stream));
    CHILD_NCCL(ncclSignal(peer, 0, 0, 0, r.comm, r.stream));
    waits.push_back(ncclWaitSignalDesc_t{2, peer, 0, 0});
    if (!local) {
      CHILD_EXPECT(ncclPutSignal(src, 16, ncclInt8, peer, win, size - 8, 0, 0, 0, r.comm, r.stream) ==
                   ncclInvalidArgument);
    }
  }
  CHILD_NCCL(ncclWaitSignal(static_cast<int>(waits.size()), waits.data(), r.comm, r.stream));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  for (int peer = 0; peer < nranks; peer++) {
    if (peer == r.rank) continue;
    std::vector<uint8_t> want = wintest::pattern(21, peer, peer * place, bytes);
    if (wintest::expectBytes(buf + peer * place, want, "put from a peer", r.rank) != 0) return 1;
  }
  if (graphAcrossHosts(ranks, nranks, perHost, src, buf, win, place, bytes) != 0) return 1;
  if (wintest::barrier(ranks) != 0) return 1;  // no peer still puts into this rank's window
  CHILD_NCCL(ncclCommWindowDeregister(r.comm, win));
  CHILD_NCCL(ncclCommWindowDeregister(r.comm, srcWin));
  CHILD_NCCL(ncclMemFree(buf));
  CHILD_NCCL(ncclMemFree(src));
  return 0;
}

TEST(Window, AcrossEmulatedHosts) {
  colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
  int tried = 0;
  for (int n : {2, 4, 8}) {
    for (int perHost : gputest::emulatedHostSizes(n)) {
      SCOPED_TRACE(gputest::emulatedHostsName(n, perHost));
      tried++;
      EXPECT_EQ(0, wintest::withRanks(
                       n, Mode::kProcesses,
                       [n, perHost](std::vector<Rank>& ranks) { return acrossHosts(ranks, n, perHost); }, perHost));
    }
  }
  EXPECT_GT(tried, 0);
}

}  // namespace
