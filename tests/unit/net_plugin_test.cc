// Choosing and loading networks (net/network.h): the example TCP plugin (examples/net_plugin_tcp,
// a v8 table) loaded through NCCL_NET_PLUGIN and driven through the v11 shim, messages of several
// sizes across it; the same plugin behind v7 and v6 tables (old_api_net_plugin.cc) through theirs;
// a plugin that does not load, or whose devices Braid cannot drive, falls back to the built-in
// socket network with a WARN; NCCL_NET naming no network is refused; NCCL_NET_PLUGIN=none.
// Plugins are loaded once per process, so each case runs in a child process of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "net/network.h"
#include "util/log.h"
#include "util/net_if.h"
#include "util/params.h"

namespace braid::net {
namespace {

using Clock = std::chrono::steady_clock;

void setEnv(const char* name, const char* value) {
  setenv(name, value, 1);
  paramsReset();
}

// Sends `bytes` over a fresh connection of `net` and checks them on the other end; 0 when all is well.
int roundTrip(const Network& network, size_t bytes) {
  const ncclNet_v11_t& net = network.table();
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = nullptr;
  if (net.listen(network.context(), 0, handle, &listenComm) != ncclSuccess) return 1;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while ((sendComm == nullptr || recvComm == nullptr) && Clock::now() < until) {
    if (sendComm == nullptr && net.connect(network.context(), 0, handle, &sendComm, nullptr) != ncclSuccess) return 2;
    if (recvComm == nullptr && net.accept(listenComm, &recvComm, nullptr) != ncclSuccess) return 3;
  }
  if (sendComm == nullptr || recvComm == nullptr) return 4;
  std::vector<unsigned char> in(bytes), out(bytes + 64, 0xee);
  for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 31 + 7);
  void *sendMr = nullptr, *recvMr = nullptr;
  if (net.regMr(sendComm, in.data(), bytes, NCCL_PTR_HOST, &sendMr) != ncclSuccess) return 5;
  if (net.regMr(recvComm, out.data(), out.size(), NCCL_PTR_HOST, &recvMr) != ncclSuccess) return 6;
  void* sendReq = nullptr;
  void* recvReq = nullptr;
  void* data = out.data();
  size_t size = out.size();
  int tag = 1;
  if (net.irecv(recvComm, 1, &data, &size, &tag, &recvMr, nullptr, &recvReq) != ncclSuccess) return 7;
  if (net.isend(sendComm, in.data(), bytes, 1, sendMr, nullptr, &sendReq) != ncclSuccess) return 8;
  int sendDone = 0, recvDone = 0, got = -1;
  while ((sendDone == 0 || recvDone == 0) && Clock::now() < until) {
    if (sendDone == 0 && net.test(sendReq, &sendDone, nullptr) != ncclSuccess) return 9;
    if (recvDone == 0 && net.test(recvReq, &recvDone, &got) != ncclSuccess) return 10;
  }
  if (recvDone == 0 || got != static_cast<int>(bytes)) return 11;
  if (std::memcmp(in.data(), out.data(), bytes) != 0 || out[bytes] != 0xee) return 12;
  (void)net.deregMr(sendComm, sendMr);
  (void)net.deregMr(recvComm, recvMr);
  (void)net.closeSend(sendComm);
  (void)net.closeRecv(recvComm);
  (void)net.closeListen(listenComm);
  return 0;
}

class NetPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    setEnv("NCCL_SOCKET_IFNAME", "=lo");
    setEnv("EXAMPLE_TCP_ADDR", "127.0.0.1");
  }
};

TEST_F(NetPlugin, TheExampleV8PluginLoadsAndCarriesMessages) {
  EXPECT_EXIT(
      {
        setEnv("NCCL_NET_PLUGIN", BRAID_EXAMPLE_NET_PLUGIN);
        setEnv("NCCL_NET", "exampletcp");  // matched case-insensitively
        std::unique_ptr<Network> network;
        if (Network::open(0x1234, &network) != ncclSuccess) std::exit(20);
        if (std::strcmp(network->name(), "ExampleTCP") != 0) std::exit(21);
        ncclNetProperties_v11_t props{};
        if (network->table().getProperties(0, &props) != ncclSuccess) std::exit(22);
        // The v8 shim fills what v8 does not know.
        if (props.maxP2pBytes != (size_t{1} << 30) || props.vProps.ndevs != 1 || props.maxMultiRequestSize != 1)
          std::exit(23);
        for (size_t bytes : {size_t{0}, size_t{1}, size_t{4097}, size_t{3} << 20}) {
          const int rc = roundTrip(*network, bytes);
          if (rc != 0) std::exit(30 + rc);
        }
        // Over 1 GiB is more than a v8 plugin can take: refused by the shim, not truncated.
        void* request = nullptr;
        char byte = 0;
        if (network->table().isend(nullptr, &byte, (size_t{1} << 30) + 1, 0, nullptr, nullptr, &request) !=
            ncclInternalError)
          std::exit(24);
        network.reset();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NetPlugin, V7AndV6PluginsLoadTogetherAndCarryMessagesThroughTheirShims) {
  EXPECT_EXIT(
      {
        setEnv("NCCL_NET_PLUGIN", BRAID_OLD_API_NET_PLUGIN_V7 "," BRAID_OLD_API_NET_PLUGIN_V6);
        for (const char* name : {"ExampleTCPv7", "ExampleTCPv6"}) {
          setEnv("NCCL_NET", name);
          std::unique_ptr<Network> network;
          if (Network::open(0x77, &network) != ncclSuccess) std::exit(20);
          if (std::strcmp(network->name(), name) != 0) std::exit(21);
          // What the older tables lack, filled in: a host device of itself, 1 GiB messages.
          const ncclNetProperties_v11_t& props = network->properties(0);
          if (props.maxP2pBytes != (size_t{1} << 30) || props.vProps.ndevs != 1 || props.regIsGlobal != 0 ||
              props.netDeviceType != NCCL_NET_DEVICE_HOST || (props.ptrSupport & NCCL_PTR_HOST) == 0)
            std::exit(22);
          for (size_t bytes : {size_t{0}, size_t{1}, size_t{4097}, size_t{3} << 20}) {
            const int rc = roundTrip(*network, bytes);
            if (rc != 0) std::exit(30 + rc);
          }
          // Registrations travel as int too: one over 1 GiB is refused, not truncated.
          void* mhandle = nullptr;
          char byte = 0;
          if (network->table().regMr(nullptr, &byte, (size_t{1} << 30) + 1, NCCL_PTR_HOST, &mhandle) !=
              ncclInternalError)
            std::exit(23);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// The cost model's network bandwidth: the devices' speeds. The built-in network on loopback (one
// device) reports the loopback figure, and the example plugin NCCL's socket default.
TEST_F(NetPlugin, TheBandwidthIsTheSpeedOfTheDevicesTheChannelsUse) {
  EXPECT_EXIT(
      {
        setEnv("NCCL_NET_PLUGIN", BRAID_EXAMPLE_NET_PLUGIN);  // read once per process: first
        std::unique_ptr<Network> plugin;
        if (Network::open(1, &plugin) != ncclSuccess || std::strcmp(plugin->name(), "ExampleTCP") != 0) std::exit(20);
        setEnv("NCCL_NET", "Socket");
        std::unique_ptr<Network> network;
        if (Network::open(1, &network) != ncclSuccess || std::strcmp(network->name(), "Socket") != 0) std::exit(21);
        if (network->bandwidthGBps(4) != kLoopbackSocketMbps / 8000.0) std::exit(22);
        if (network->bandwidthGBps(1) != kLoopbackSocketMbps / 8000.0) std::exit(23);
        if (plugin->bandwidthGBps(4) != 10000 / 8000.0) std::exit(24);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NetPlugin, APluginWhoseDevicesTakeNoHostMemoryOrOffloadToTheGpuIsNotUsed) {
  EXPECT_EXIT(
      {
        setEnv("NCCL_NET_PLUGIN", BRAID_OLD_API_NET_PLUGIN_V7);
        struct Case {
          const char* variable;
          const char* value;
          const char* why;
        };
        for (const Case& c : {Case{"OLD_API_NET_PTR_SUPPORT", "2", "lacks NCCL_PTR_HOST"},
                              Case{"OLD_API_NET_DEVICE_TYPE", "1", "offloads to the GPU (device type 1)"}}) {
          setenv(c.variable, c.value, 1);
          std::unique_ptr<Network> network;
          if (Network::open(1, &network) != ncclSuccess) std::exit(20);
          if (std::strcmp(network->name(), "Socket") != 0) std::exit(21);
          if (std::string(logLastError()).find(c.why) == std::string::npos) std::exit(22);
          setEnv("NCCL_NET", "ExampleTCPv7");  // asked for by name: nothing else will do
          std::unique_ptr<Network> named;
          if (Network::open(1, &named) != ncclInvalidUsage || named != nullptr) std::exit(23);
          setEnv("NCCL_NET", "");
          unsetenv(c.variable);
        }
        // Without the overrides the same plugin is chosen (it is the first candidate).
        std::unique_ptr<Network> network;
        if (Network::open(1, &network) != ncclSuccess || std::strcmp(network->name(), "ExampleTCPv7") != 0)
          std::exit(24);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NetPlugin, ASecondPluginOfAnOlderVersionAlreadyWrappedIsRefused) {
  EXPECT_EXIT(
      {
        // The same v7 library twice: the shim wraps one v7 table, so the second entry is refused
        // (rather than letting it replace the first one's table), and the first still works.
        setEnv("NCCL_NET_PLUGIN", BRAID_OLD_API_NET_PLUGIN_V7 "," BRAID_OLD_API_NET_PLUGIN_V7);
        std::unique_ptr<Network> network;
        if (Network::open(1, &network) != ncclSuccess || std::strcmp(network->name(), "ExampleTCPv7") != 0)
          std::exit(20);
        if (std::string(logLastError()).find("adapts one plugin per older version") == std::string::npos) std::exit(21);
        if (roundTrip(*network, 5000) != 0) std::exit(22);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NetPlugin, APluginThatDoesNotLoadFallsBackToSockets) {
  EXPECT_EXIT(
      {
        setEnv("NCCL_NET_PLUGIN", "/nonexistent/libnccl-net-missing.so");
        std::unique_ptr<Network> network;
        if (Network::open(1, &network) != ncclSuccess) std::exit(20);
        if (std::strcmp(network->name(), "Socket") != 0) std::exit(21);
        if (std::string(logLastError()).find("cannot load /nonexistent/libnccl-net-missing.so") == std::string::npos)
          std::exit(22);
        if (roundTrip(*network, 1000) != 0) std::exit(23);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NetPlugin, NetNamingNoNetworkIsRefusedAndNoneLoadsNothing) {
  EXPECT_EXIT(
      {
        setEnv("NCCL_NET_PLUGIN", "none");
        setEnv("NCCL_NET", "IB");
        std::unique_ptr<Network> network;
        if (Network::open(1, &network) != ncclInvalidUsage || network != nullptr) std::exit(20);
        if (std::string(logLastError()).find("NCCL_NET=IB") == std::string::npos) std::exit(21);
        setEnv("NCCL_NET", "socket");
        if (Network::open(1, &network) != ncclSuccess || std::strcmp(network->name(), "Socket") != 0) std::exit(22);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace braid::net
