// GIN over the proxy transport: kernels of the test (gin_kernels.cu, compiled against Braid's
// nccl_device.h) put, putValue, signal, count and meet in GIN barriers on a device communicator
// whose ranks are spread over emulated hosts (the network between hosts, NVLink within one), and
// every byte they move is checked on the host. Refusals: GIN types and connections Braid does not
// have.
#include <gtest/gtest.h>
#include <nccl_device.h>

#include <cstdint>
#include <vector>

#include "gin_kernels.h"
#include "window_test_util.h"

namespace {

using wintest::Mode;
using wintest::Rank;

constexpr size_t kBlock = (size_t{300} << 10) + 40;  // two network chunks and an odd tail
constexpr uint64_t kSeed = 47;

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
  CHILD_EXPECT(dev.ginConnectionCount == 1 && dev.ginContextCount == 2 && dev.ginSignalCount == 1 + nranks);
  if (allToAllRounds(r, ranks, dev, win, buf, l) != 0) return 1;
  if (putValueRounds(r, ranks, dev, win, buf, l) != 0) return 1;

  int* errors = nullptr;
  CHILD_CUDA(cudaMalloc(&errors, 2 * sizeof(int)));
  CHILD_CUDA(cudaMemset(errors, 0, 2 * sizeof(int)));
  CHILD_CUDA(launchGinBarrierRounds(dev, win, l.slots(), 20, errors, r.stream));
  // Each kernel's first launch comes after the last one ended: a lazily loaded kernel may wait for
  // the GPU to go idle, and the proxy's copies wait for the loader.
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  CHILD_CUDA(launchGinSignalTimeout(dev, uint64_t{1} << 20, errors + 1, r.stream));
  CHILD_CUDA(cudaStreamSynchronize(r.stream));
  int got[2] = {-1, -1};
  CHILD_CUDA(cudaMemcpy(got, errors, sizeof(got), cudaMemcpyDeviceToHost));
  CHILD_EXPECT(got[0] == 0);            // every slot held its round's value after each barrier
  CHILD_EXPECT(got[1] == ncclTimeout);  // a signal nobody raises times out
  CHILD_CUDA(cudaFree(errors));

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

}  // namespace
