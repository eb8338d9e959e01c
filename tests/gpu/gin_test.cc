// GIN over the proxy transport: kernels of the test (gin_kernels.cu, compiled against Braid's
// nccl_device.h) put, putValue, signal, count and meet in GIN barriers on a device communicator
// whose ranks are spread over emulated hosts (the network between hosts, NVLink within one), and
// every byte they move is checked on the host. Gets are checked the same way, also as the GPU reads
// them right after their completion. Refusals: GIN types and connections Braid does not have; and
// descriptors no device code writes, which fail the communicator instead of crashing its proxy.
#include <gtest/gtest.h>
#include <nccl_device.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gin_kernels.h"
#include "window_test_util.h"

namespace {

using wintest::Mode;
using wintest::Rank;

constexpr size_t kBlock = (size_t{300} << 10) + 40;  // two network chunks and an odd tail
constexpr uint64_t kSeed = 47;
// Gets from ranks on other hosts too; false: from the caller's LSA team only (the other blocks are
// then checked to be untouched).
constexpr bool kRemoteGets = true;

// The window: nranks source blocks, nranks destination blocks, one 8-byte slot per rank, the VA
// signal word.
struct Layout {
  int nranks;
  size_t dst() const { return static_cast<size_t>(nranks) * kBlock; }
  size_t slots() const { return 2 * dst(); }
  size_t vaSignal() const { return slots() + 8 * static_cast<size_t>(nranks); }
  size_t bytes() const { return vaSignal() + 4096; }
};

ncclDevCommRequirements_t ginRequirements() {
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.ginContextCount = 2;
  reqs.ginSignalCount = 1;
  reqs.ginCounterCount = 1;
  reqs.worldGinBarrierCount = 1;
  reqs.barrierCount = 1;  // hybrid barriers: their GIN parts span the LSA teams
  return reqs;
}

// Rounds of the all-to-all: every block lands whole at its place, from its sender's round data.
int allToAllRounds(Rank& r, std::vector<Rank>& ranks, const ncclDevComm& dev, ncclWindow_t win, char* buf,
                   const Layout& l) {
  for (uint64_t round = 1; round <= 3; ++round) {
    const std::vector<uint8_t> src = wintest::pattern(kSeed + round, r.rank, 0, l.dst());
    CHILD_CUDA(gputest::uploadSync(buf, src.data(), src.size()));
    CHILD_CUDA(gputest::poisonSync(buf + l.dst(), static_cast<uint8_t>(0x30 + round), l.dst()));
    if (wintest::barrier(ranks) != 0) return 1;  // every destination poisoned before any put
    CHILD_CUDA(launchGinAllToAll(dev, win, kBlock, 1, round, r.stream));
    CHILD_CUDA(cudaStreamSynchronize(r.stream));
    for (int peer = 0; peer < l.nranks; ++peer) {
      const std::vector<uint8_t> want = wintest::pattern(kSeed + round, peer, r.rank * kBlock, kBlock);
      if (wintest::expectBytes(buf + l.dst() + peer * kBlock, want, "GIN put", r.rank) != 0) return 1;
    }
    if (wintest::barrier(ranks) != 0) return 1;  // checked before the next round overwrites it
  }
  return 0;
}

int putValueRounds(Rank& r, std::vector<Rank>& ranks, const ncclDevComm& dev, ncclWindow_t win, char* buf,
                   const Layout& l) {
  for (uint64_t round = 1; round <= 2; ++round) {
    const uint64_t base = round << 40;
    CHILD_CUDA(launchGinPutValueVa(dev, win, l.slots(), l.vaSignal(), base, round, r.stream));
    CHILD_CUDA(cudaStreamSynchronize(r.stream));
    std::vector<uint64_t> got(l.nranks);
    CHILD_CUDA(cudaMemcpy(got.data(), buf + l.slots(), 8 * got.size(), cudaMemcpyDeviceToHost));
    for (int peer = 0; peer < l.nranks; ++peer) CHILD_EXPECT(got[peer] == base + static_cast<uint64_t>(peer));
    if (wintest::barrier(ranks) != 0) return 1;
  }
  return 0;
}

// What ginGetRoundKernel sums of a block: byte i weighted by i + 1.
uint64_t weightedSum(const std::vector<uint8_t>& bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes.size(); ++i) sum += uint64_t{bytes[i]} * (i + 1);
  return sum;
}

// Rounds of gets: rank r fetches every peer's source block r into its destination block of that
// peer, completed by a flush (odd rounds) or by a request per peer (even rounds); each block is
// exact on the host, and was already so for the GPU right after the completion.
int getRounds(Rank& r, std::vector<Rank>& ranks, const ncclDevComm& dev, ncclWindow_t win, char* buf, const Layout& l) {
  const int lsaFirst = dev.rank - dev.lsaRank;
  uint64_t* sums = nullptr;
  CHILD_CUDA(cudaMalloc(&sums, sizeof(uint64_t) * l.nranks));
  for (uint64_t round = 1; round <= 4; ++round) {
    const uint64_t seed = kSeed + 10 + round;
    const uint8_t poison = static_cast<uint8_t>(0x50 + round);
    const std::vector<uint8_t> src = wintest::pattern(seed, r.rank, 0, l.dst());
    CHILD_CUDA(gputest::uploadSync(buf, src.data(), src.size()));
    CHILD_CUDA(gputest::poisonSync(buf + l.dst(), poison, l.dst()));
    CHILD_CUDA(gputest::poisonSync(sums, 0, sizeof(uint64_t) * l.nranks));
    if (wintest::barrier(ranks) != 0) return 1;  // every source written before any get reads it
    CHILD_CUDA(launchGinGetRound(dev, win, kBlock, !kRemoteGets, round % 2 == 0, round, sums, r.stream));
    CHILD_CUDA(cudaStreamSynchronize(r.stream));
    std::vector<uint64_t> gpuSums(l.nranks);
    CHILD_CUDA(cudaMemcpy(gpuSums.data(), sums, sizeof(uint64_t) * gpuSums.size(), cudaMemcpyDeviceToHost));
    for (int peer = 0; peer < l.nranks; ++peer) {
      const bool fetched = kRemoteGets || (lsaFirst <= peer && peer < lsaFirst + dev.lsaSize);
      const std::vector<uint8_t> want =
          fetched ? wintest::pattern(seed, peer, r.rank * kBlock, kBlock) : std::vector<uint8_t>(kBlock, poison);
      if (wintest::expectBytes(buf + l.dst() + peer * kBlock, want, fetched ? "GIN get" : "GIN get not issued",
                               r.rank) != 0) {
        return 1;
      }
      if (fetched && gpuSums[peer] != weightedSum(want)) {
        std::fprintf(stderr, "rank %d: GIN get from rank %d (round %llu): the GPU read other bytes after %s\n", r.rank,
                     peer, static_cast<unsigned long long>(round), round % 2 == 0 ? "its request's wait" : "flush");
        return 1;
      }
    }
    if (wintest::barrier(ranks) != 0) return 1;  // no get still reads a source the next round rewrites
  }
  CHILD_CUDA(cudaFree(sums));
  return 0;
}

// 20 rounds of puts and barriers, with GIN barriers and then with hybrid ones: after each barrier
// every slot holds its round's value. A failure names the barrier, round, peer and value.
int barrierRounds(Rank& r, const ncclDevComm& dev, ncclWindow_t win, const Layout& l) {
  GinBarrierCheck* checks = nullptr;
  CHILD_CUDA(cudaMalloc(&checks, 2 * sizeof(GinBarrierCheck)));
  CHILD_CUDA(cudaMemset(checks, 0, 2 * sizeof(GinBarrierCheck)));
  for (int hybrid = 0; hybrid < 2; ++hybrid) {
    CHILD_CUDA(launchGinBarrierRounds(dev, win, l.slots(), 20, hybrid != 0, checks + hybrid, r.stream));
    // Each kernel's first launch comes after the last one ended: a lazily loaded kernel may wait
    // for the GPU to go idle, and the proxy's copies wait for the loader.
    CHILD_CUDA(cudaStreamSynchronize(r.stream));
  }
  GinBarrierCheck got[2] = {};
  CHILD_CUDA(cudaMemcpy(got, checks, sizeof(got), cudaMemcpyDeviceToHost));
  CHILD_CUDA(cudaFree(checks));
  int bad = 0;
  for (int hybrid = 0; hybrid < 2; ++hybrid) {
    const GinBarrierCheck& c = got[hybrid];
    if (c.mismatches == 0) continue;
    std::fprintf(stderr,
                 "rank %d: after %s barriers, %d slots missed their round's put; the first: round %d, the slot of "
                 "rank %d held %llu (want %d)\n",
                 r.rank, hybrid != 0 ? "hybrid" : "GIN", c.mismatches, c.round, c.peer, c.got, c.round * 1000 + c.peer);
    bad = 1;
  }
  return bad;
}

int ginAcrossHosts(std::vector<Rank>& ranks, int nranks) {
  Rank& r = ranks[0];
  const Layout l{nranks};
  char* buf = nullptr;
  CHILD_NCCL(ncclMemAlloc(reinterpret_cast<void**>(&buf), l.bytes()));
  CHILD_CUDA(cudaMemset(buf, 0, l.bytes()));
  ncclWindow_t win = nullptr;
  CHILD_NCCL(ncclCommWindowRegister(r.comm, buf, l.bytes(), &win, NCCL_WIN_COLL_SYMMETRIC));
  ncclCommProperties_t props = wintest::properties(r.comm);
  CHILD_EXPECT(props.ginType == NCCL_GIN_TYPE_PROXY);
  CHILD_EXPECT(props.ginSupport[NCCL_GIN_TYPE_PROXY]);

  ncclDevCommRequirements_t reqs = ginRequirements();
  ncclDevComm dev{};
  CHILD_NCCL(ncclDevCommCreate(r.comm, &reqs, &dev));
  CHILD_EXPECT(dev.ginConnectionCount == 1 && dev.ginContextCount == 2);
  // The program's signal, the world GIN barrier's, and the hybrid barrier's rail and dense sets.
  CHILD_EXPECT(dev.ginSignalCount == 1 + nranks + nranks / dev.lsaSize + nranks);
  if (allToAllRounds(r, ranks, dev, win, buf, l) != 0) return 1;
  if (putValueRounds(r, ranks, dev, win, buf, l) != 0) return 1;

  if (barrierRounds(r, dev, win, l) != 0) return 1;
  int* timeout = nullptr;
  CHILD_CUDA(cudaMalloc(&timeout, sizeof(int)));
  CHILD_CUDA(cudaMemset(timeout, 0, sizeof(int)));
  CHILD_CUDA(launchGinSignalTimeout(dev, uint64_t{1} << 20, timeout, r.stream));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  int got = -1;
  CHILD_CUDA(cudaMemcpy(&got, timeout, sizeof(got), cudaMemcpyDeviceToHost));
  CHILD_EXPECT(got == ncclTimeout);  // a signal nobody raises times out
  CHILD_CUDA(cudaFree(timeout));
  if (getRounds(r, ranks, dev, win, buf, l) != 0) return 1;

  if (wintest::barrier(ranks) != 0) return 1;  // no peer still puts into this rank's window
  CHILD_NCCL(ncclDevCommDestroy(r.comm, &dev));
  CHILD_NCCL(ncclCommWindowDeregister(r.comm, win));
  CHILD_NCCL(ncclMemFree(buf));
  return 0;
}

// What Braid's GIN is not: refused alike on every rank, with nothing made.
int refusals(std::vector<Rank>& ranks) {  // this process's ranks: one
  Rank& r = ranks[0];
  ncclDevComm dev{};
  ncclDevCommRequirements_t reqs = ginRequirements();
  reqs.ginType = NCCL_GIN_TYPE_GDAKI;
  CHILD_EXPECT(ncclDevCommCreate(r.comm, &reqs, &dev) == ncclInvalidUsage);
  reqs = ginRequirements();
  reqs.ginConnectionType = NCCL_GIN_CONNECTION_CUSTOM_STRIDE;
  CHILD_EXPECT(ncclDevCommCreate(r.comm, &reqs, &dev) == ncclInvalidUsage);
  reqs = ginRequirements();
  reqs.ginSignalCount = -1;
  CHILD_EXPECT(ncclDevCommCreate(r.comm, &reqs, &dev) == ncclInvalidArgument);
  ncclGinBarrierHandle_t handle{};
  ncclDevResourceRequirements_t res{};
  CHILD_EXPECT(ncclGinBarrierCreateRequirement(r.comm, ncclTeamWorld(r.comm), -1, &handle, &res) ==
               ncclInvalidArgument);
  CHILD_NCCL(ncclGinBarrierCreateRequirement(r.comm, ncclTeamWorld(r.comm), 3, &handle, &res));
  int nranks = 0;
  CHILD_NCCL(ncclCommCount(r.comm, &nranks));
  CHILD_EXPECT(res.ginSignalCount == 3 * nranks && res.outGinSignalStart == &handle.signal0);
  return 0;
}

// One rank posts a descriptor of `kind` (launchGinBadGfd) on a communicator of its own: the proxy
// thread refuses it and fails the communicator (ncclInvalidUsage as its asynchronous error, a WARN
// naming GIN), and the communicator is aborted, not destroyed: the descriptor is never completed.
int hostileDescriptor(int kind) {
  return gputest::runRanksInProcesses(1, [kind](int rank, const ncclUniqueId& id) {
    alarm(wintest::kWatchdogSeconds);
    CHILD_CUDA(cudaSetDevice(gputest::deviceOfRank(rank)));
    ncclComm_t comm = nullptr;
    CHILD_NCCL(ncclCommInitRank(&comm, 1, id, rank));
    cudaStream_t stream = nullptr;
    CHILD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    constexpr size_t kWinBytes = 4096;
    void* buf = nullptr;
    CHILD_NCCL(ncclMemAlloc(&buf, kWinBytes));
    ncclWindow_t win = nullptr;
    CHILD_NCCL(ncclCommWindowRegister(comm, buf, kWinBytes, &win, NCCL_WIN_COLL_SYMMETRIC));
    ncclDevCommRequirements_t reqs = ginRequirements();
    ncclDevComm dev{};
    CHILD_NCCL(ncclDevCommCreate(comm, &reqs, &dev));

    CHILD_CUDA(launchGinBadGfd(dev, kind, win, kWinBytes, stream));
    CHILD_CUDA(cudaStreamSynchronize(stream));
    ncclResult_t async = ncclSuccess;
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < giveUp) {
      CHILD_NCCL(ncclCommGetAsyncError(comm, &async));
      if (async != ncclSuccess && async != ncclInProgress) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const char* last = ncclGetLastError(comm);
    std::fprintf(stderr, "hostile GFD kind %d: asynchronous error %d (%s); last error: %s\n", kind,
                 static_cast<int>(async), ncclGetErrorString(async), last == nullptr ? "(none)" : last);
    CHILD_EXPECT(async == ncclInvalidUsage);
    CHILD_EXPECT(last != nullptr && std::strstr(last, "GIN") != nullptr);
    CHILD_NCCL(ncclCommAbort(comm));
    CHILD_NCCL(ncclMemFree(buf));
    CHILD_CUDA(cudaStreamDestroy(stream));
    return 0;
  });
}

TEST(Gin, AcrossEmulatedHosts) {
  colltest::ScopedSetenv ifname("NCCL_SOCKET_IFNAME", "lo");
  int tried = 0;
  for (int n : {2, 4}) {
    for (int perHost : gputest::tierHostSizes(n)) {
      SCOPED_TRACE(gputest::emulatedHostsName(n, perHost));
      tried++;
      EXPECT_EQ(0,
                wintest::withRanks(
                    n, Mode::kProcesses, [n](std::vector<Rank>& ranks) { return ginAcrossHosts(ranks, n); }, perHost));
    }
  }
  EXPECT_GT(tried, 0);
}

// One rank, no other host: the proxy thread runs without network connections, every operation a
// copy within the LSA team.
TEST(Gin, OneRankWithoutNetwork) {
  EXPECT_EQ(0,
            wintest::withRanks(1, Mode::kProcesses, [](std::vector<Rank>& ranks) { return ginAcrossHosts(ranks, 1); }));
}

TEST(Gin, Refusals) {
  EXPECT_EQ(0, wintest::withRanks(
                   2, Mode::kProcesses, [](std::vector<Rank>& ranks) { return refusals(ranks); }, 1));
}

// Descriptors no device code writes (an unknown op, a window no one has, a range past a window's
// end), each on a fresh communicator: refused as an asynchronous error, nothing crashes or hangs.
TEST(Gin, HostileDescriptorsBecomeAsyncErrors) {
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE("hostile GFD kind " + std::to_string(kind));
    EXPECT_EQ(0, hostileDescriptor(kind));
  }
}

}  // namespace
