// The correctness sweeps (coll_sweep_harness.h) with ranks on emulated hosts: every collective on
// every layout of hosts, buffers aligned only to the element, LL across hosts, Direct and trees,
// and over external net plugins (the example TCP plugin, and the same behind a v6 table).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coll_sweep_fixture.h"

namespace {

using namespace collsweep;  // NOLINT(google-build-using-namespace): the sweeps' harness

// Ranks on emulated hosts (NCCL_HOSTID differs per host): every ring crosses between them over the
// socket network on loopback, through the proxy. Hosts may share GPUs (gputest::emulatedHostsFit),
// so these run with fewer GPUs than ranks too: 4 ranks on 1 GPU are 4 hosts of 1.
class CollSweepAcrossHosts : public CollSweep {
 protected:
  void SetUp() override {
    if (hostSizes().empty()) GTEST_SKIP() << nranks() << " ranks across hosts do not fit this machine";
    std::string tier;
    if (gputest::leftOutOfQuickTier(nranks(), &tier)) GTEST_SKIP() << tier;
  }
  // Ranks per host: n / 2, then fewer, down to 1, those that fit this machine.
  std::vector<int> hostSizes() const { return gputest::emulatedHostSizes(nranks()); }
  // Hosts as large as fit: for the tests that need only one layout.
  int largestHost() const { return hostSizes().front(); }
  // The cases on every layout of hostSizes().
  void sweepEveryLayout(const std::vector<Case>& cases) {
    for (int perHost : gputest::tierHostSizes(nranks())) {
      SCOPED_TRACE(gputest::emulatedHostsName(nranks(), perHost));
      sweep(Mode::kProcesses, cases, cudaStreamDefault, perHost);
    }
  }

  ScopedSetenv ifname_{"NCCL_SOCKET_IFNAME", "lo"};
};

// Every collective; 4 ranks: 2 hosts of 2 and 4 hosts of 1; 2 ranks: 2 of 1.
TEST_P(CollSweepAcrossHosts, AllColls) { sweepEveryLayout(tierSweepAllColls(nranks())); }

// Buffers aligned only to the element, with Simple forced: the GPU copies between unaligned user
// buffers and aligned host FIFOs (also where every rank has a GPU of its own: 1 rank per host).
TEST_P(CollSweepAcrossHosts, BuffersAlignedOnlyToTheElementSimple) {
  ScopedSetenv simple("NCCL_PROTO", "Simple");
  sweep(Mode::kProcesses, casesAlignedOnlyToTheElement(nranks()), cudaStreamDefault, hostSizes().back());
}

// LL over the network (BRAID_NET_LL=1), forced for every size: the proxies ship LL slots and copy
// them into the receivers' LL FIFOs (device/dev_types.h). The largest hosts that fit (2 of 2 on 4
// GPUs); with the default protocols too, where small sizes take LL and large ones Simple on the same
// connections.
TEST_P(CollSweepAcrossHosts, AllCollsOverLl) {
  if (colltest::againstReference()) GTEST_SKIP() << "BRAID_NET_LL is Braid's";
  ScopedSetenv netLl("BRAID_NET_LL", "1");
  const std::vector<Case> cases = tierSweepAllColls(nranks());
  for (bool forceLl : {true, false}) {
    SCOPED_TRACE(forceLl ? "NCCL_PROTO=LL" : "default protocols");
    std::optional<ScopedSetenv> forced;
    if (forceLl) forced.emplace("NCCL_PROTO", "LL");
    sweep(Mode::kProcesses, cases, cudaStreamDefault, largestHost());
  }
}

// Direct (NCCL_ALGO=Direct) across emulated hosts: every pair connected, NVLink P2P inside a host
// and the network between hosts, where the senders publish each step to their proxy
// (prims_direct_ll.h). 2 hosts of 2 (both kinds of peer in one CTA) and hosts of one GPU; 1 MiB + 3
// takes many steps per connection, more than the FIFOs hold.
TEST_P(CollSweepAcrossHosts, AllCollsDirect) {
  if (colltest::againstReference()) GTEST_SKIP() << "Direct is Braid's algorithm; NCCL does not know the name";
  ScopedSetenv netLl("BRAID_NET_LL", "1");
  ScopedSetenv algo("NCCL_ALGO", "Direct");
  sweepEveryLayout(tierSweepAllColls(nranks()));
}

// Tree AllReduce (NCCL_ALGO=allreduce:tree) across emulated hosts: 2 hosts of 2 GPUs (a chain in
// each host under the hosts' tree) and hosts of one GPU (4: a binary tree of depth 2), with LL
// (BRAID_NET_LL=1) and with Simple forced; counts up to 1 MiB + 3 take many steps per channel.
TEST_P(CollSweepAcrossHosts, AllReduceTrees) {
  if (colltest::againstReference()) GTEST_SKIP() << "BRAID_NET_LL is Braid's";
  ScopedSetenv netLl("BRAID_NET_LL", "1");
  ScopedSetenv algo("NCCL_ALGO", "allreduce:tree");
  const std::vector<Case> cases = tierSweepOf({Coll::kAllReduce}, nranks());
  for (const char* proto : {"LL", "Simple"}) {
    SCOPED_TRACE(proto);
    ScopedSetenv forced("NCCL_PROTO", proto);
    sweepEveryLayout(cases);
  }
}

// A test net plugin where the build put it, or in BRAID_TEST_PLUGIN_DIR (binaries staged elsewhere:
// scripts/stage-prebuilt.sh).
std::string testPlugin(const std::string& built) {
  const char* dir = std::getenv("BRAID_TEST_PLUGIN_DIR");
  if (dir == nullptr || *dir == '\0') return built;
  return std::string(dir) + "/" + built.substr(built.find_last_of('/') + 1);
}

// The same over an external net plugin (examples/net_plugin_tcp, a v8 table) loaded through
// NCCL_NET_PLUGIN: the largest hosts that fit (2 of 2 on 4 GPUs).
TEST_P(CollSweepAcrossHosts, AllCollsOverTheExampleNetPlugin) {
  ScopedSetenv plugin("NCCL_NET_PLUGIN", testPlugin(BRAID_EXAMPLE_NET_PLUGIN).c_str());
  ScopedSetenv net("NCCL_NET", "ExampleTCP");
  ScopedSetenv addr("EXAMPLE_TCP_ADDR", "127.0.0.1");
  sweep(Mode::kProcesses, tierSweepAllColls(nranks()), cudaStreamDefault, largestHost());
}

// The same plugin behind the oldest table NCCL 2.28 loads (v6: int sizes, no device handles),
// through Braid's v6 shim (against NVIDIA's library: its own v6 loader, which checks the test plugin).
TEST_P(CollSweepAcrossHosts, AllCollsOverAV6NetPlugin) {
  ScopedSetenv plugin("NCCL_NET_PLUGIN", testPlugin(BRAID_OLD_API_NET_PLUGIN_V6).c_str());
  ScopedSetenv net("NCCL_NET", "ExampleTCPv6");
  ScopedSetenv addr("EXAMPLE_TCP_ADDR", "127.0.0.1");
  sweep(Mode::kProcesses, tierSweepAllColls(nranks()), cudaStreamDefault, largestHost());
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollSweepAcrossHosts, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

}  // namespace
