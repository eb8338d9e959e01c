// Interface selection rules (util/net_if.h) on synthetic interface lists.
#include "util/net_if.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace braid {
namespace {

constexpr unsigned kUpRunning = IFF_UP | IFF_RUNNING;

NetIf makeIf(const std::string& name, const char* addr, const char* mask, unsigned flags = kUpRunning) {
  NetIf netIf;
  netIf.name = name;
  netIf.flags = flags;
  if (inet_pton(AF_INET, addr, &netIf.addr.sin.sin_addr) == 1) {
    netIf.addr.sin.sin_family = AF_INET;
    netIf.mask.sin.sin_family = AF_INET;
    EXPECT_EQ(inet_pton(AF_INET, mask, &netIf.mask.sin.sin_addr), 1);
  } else {
    netIf.addr.sin6.sin6_family = AF_INET6;
    netIf.mask.sin6.sin6_family = AF_INET6;
    EXPECT_EQ(inet_pton(AF_INET6, addr, &netIf.addr.sin6.sin6_addr), 1);
    EXPECT_EQ(inet_pton(AF_INET6, mask, &netIf.mask.sin6.sin6_addr), 1);
  }
  return netIf;
}

NetIf lo4() { return makeIf("lo", "127.0.0.1", "255.0.0.0", kUpRunning | IFF_LOOPBACK); }
NetIf lo6() { return makeIf("lo", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", kUpRunning | IFF_LOOPBACK); }
NetIf eth0() { return makeIf("eth0", "192.0.2.2", "255.255.255.0"); }
NetIf eth0v6() { return makeIf("eth0", "fd00::2", "ffff:ffff:ffff:ffff::"); }
NetIf eth1() { return makeIf("eth1", "10.1.0.5", "255.255.0.0"); }
NetIf docker0() { return makeIf("docker0", "172.17.0.1", "255.255.0.0"); }
NetIf virbr0() { return makeIf("virbr0", "192.168.122.1", "255.255.255.0"); }
NetIf ib0() { return makeIf("ib0", "10.9.0.7", "255.255.0.0"); }

// Names (with family) of the selection, in order.
std::vector<std::string> pick(const std::vector<NetIf>& all, const NetIfPolicy& policy = {}) {
  std::vector<std::string> names;
  for (const NetIf& netIf : netIfSelect(all, policy)) {
    names.push_back(netIf.name + (netIf.addr.sa.sa_family == AF_INET6 ? "/6" : "/4"));
  }
  return names;
}

NetIfPolicy ifname(const std::string& spec) {
  NetIfPolicy policy;
  policy.ifname = spec;
  return policy;
}

using Names = std::vector<std::string>;

TEST(NetIfTest, EthBeatsLoopback) { EXPECT_EQ(pick({lo4(), eth0()}), (Names{"eth0/4", "lo/4"})); }

TEST(NetIfTest, DockerBeatsLoopback) { EXPECT_EQ(pick({lo4(), docker0()}), (Names{"docker0/4", "lo/4"})); }

TEST(NetIfTest, OnlyLoopbackWorks) { EXPECT_EQ(pick({lo4()}), (Names{"lo/4"})); }

TEST(NetIfTest, DefaultOrder) {
  EXPECT_EQ(pick({virbr0(), lo4(), docker0(), eth0(), ib0()}),
            (Names{"ib0/4", "eth0/4", "docker0/4", "lo/4", "virbr0/4"}));
}

TEST(NetIfTest, Ipv4BeforeIpv6AtTheSameRank) {
  EXPECT_EQ(pick({lo6(), eth0v6(), lo4(), eth0()}), (Names{"eth0/4", "eth0/6", "lo/4", "lo/6"}));
}

TEST(NetIfTest, DownOrNotRunningInterfacesAreSkipped) {
  NetIf down = eth0();
  down.flags = IFF_RUNNING;
  NetIf notRunning = eth1();
  notRunning.flags = IFF_UP;
  EXPECT_EQ(pick({down, notRunning, lo4()}), (Names{"lo/4"}));
}

TEST(NetIfTest, LinkLocalIpv6IsSkipped) {
  NetIf linkLocal = makeIf("eth0", "fe80::1", "ffff:ffff:ffff:ffff::");
  EXPECT_EQ(pick({linkLocal, lo4()}), (Names{"lo/4"}));
}

TEST(NetIfTest, FamilyFilter) {
  NetIfPolicy v6;
  v6.family = AF_INET6;
  EXPECT_EQ(pick({lo4(), eth0(), eth0v6(), lo6()}, v6), (Names{"eth0/6", "lo/6"}));
  NetIfPolicy v4;
  v4.family = AF_INET;
  EXPECT_EQ(pick({lo6(), eth0v6(), eth0()}, v4), (Names{"eth0/4"}));
}

TEST(NetIfTest, PrefixList) {
  std::vector<NetIf> all = {lo4(), eth0(), eth1(), docker0()};
  EXPECT_EQ(pick(all, ifname("eth")), (Names{"eth0/4", "eth1/4"}));
  EXPECT_EQ(pick(all, ifname("lo")), (Names{"lo/4"}));
  // An include list is a preference order.
  EXPECT_EQ(pick(all, ifname("eth1,docker")), (Names{"eth1/4", "docker0/4"}));
  EXPECT_EQ(pick(all, ifname(" docker , eth0 ")), (Names{"docker0/4", "eth0/4"}));
  EXPECT_TRUE(pick(all, ifname("ens")).empty());
}

TEST(NetIfTest, ExcludeList) {
  std::vector<NetIf> all = {lo4(), eth0(), eth1(), docker0()};
  // The remaining interfaces keep the default order.
  EXPECT_EQ(pick(all, ifname("^eth")), (Names{"docker0/4", "lo/4"}));
  EXPECT_EQ(pick(all, ifname("^docker,lo")), (Names{"eth0/4", "eth1/4"}));
  EXPECT_TRUE(pick({lo4()}, ifname("^lo")).empty());
}

TEST(NetIfTest, ExactNames) {
  NetIf eth10 = makeIf("eth10", "10.2.0.1", "255.255.0.0");
  std::vector<NetIf> all = {lo4(), eth0(), eth10};
  EXPECT_EQ(pick(all, ifname("eth1")), (Names{"eth10/4"}));
  EXPECT_TRUE(pick(all, ifname("=eth1")).empty());
  EXPECT_EQ(pick(all, ifname("=eth0")), (Names{"eth0/4"}));
  EXPECT_EQ(pick(all, ifname("^=eth0")), (Names{"eth10/4", "lo/4"}));
}

TEST(NetIfTest, CommIdSubnetComesFirst) {
  NetIfPolicy policy;
  policy.haveCommId = true;
  ASSERT_EQ(inet_pton(AF_INET, "10.1.200.3", &policy.commId.sin.sin_addr), 1);
  policy.commId.sin.sin_family = AF_INET;
  EXPECT_EQ(pick({lo4(), eth0(), ib0(), eth1()}, policy), (Names{"eth1/4", "ib0/4", "eth0/4", "lo/4"}));
  // NCCL_SOCKET_IFNAME still decides alone.
  policy.ifname = "eth0";
  EXPECT_EQ(pick({lo4(), eth0(), ib0(), eth1()}, policy), (Names{"eth0/4"}));
}

TEST(NetIfTest, HostListIncludesLoopback) {
  // The real host: whatever it has, loopback is there, up and running.
  std::vector<NetIf> all;
  ASSERT_EQ(netIfList(&all), ncclSuccess);
  EXPECT_EQ(pick(all, ifname("=lo")).empty(), false);
}

// The socket network's speed: the link's from sysfs; loopback (whose file cannot be read) the
// model's loopback figure; an unreadable, zero or negative speed NCCL's 10 Gbit/s default.
TEST(NetIfTest, SpeedFromSysfsElseLoopbackOrTheDefault) {
  char dir[] = "/tmp/braid_sysnet_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  auto writeSpeed = [&](const std::string& name, const char* text) {
    std::filesystem::create_directories(root + "/" + name);
    std::ofstream(root + "/" + name + "/speed") << text;
  };
  writeSpeed("eth0", "100000\n");
  writeSpeed("eth1", "-1\n");
  writeSpeed("ib0", "0\n");
  EXPECT_EQ(netIfSpeedMbps(eth0(), root), 100000);
  EXPECT_EQ(netIfSpeedMbps(eth1(), root), kUnknownSocketMbps);
  EXPECT_EQ(netIfSpeedMbps(ib0(), root), kUnknownSocketMbps);
  EXPECT_EQ(netIfSpeedMbps(docker0(), root), kUnknownSocketMbps);  // no file
  EXPECT_EQ(netIfSpeedMbps(lo4(), root), kLoopbackSocketMbps);
  writeSpeed("lo", "oops");
  EXPECT_EQ(netIfSpeedMbps(lo4(), root), kLoopbackSocketMbps);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace braid
