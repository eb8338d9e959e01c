// Bootstrap between processes on loopback: every rank is a fork()ed child that reports its result,
// its elapsed time and its last WARN through a pipe, then _exit()s (bootstrap_test_util.h). Unique
// ids are made in the parent (so the ncclGetUniqueId root threads live there). Here: ranks that all
// come, from 1 to 32, with one root or several, NCCL_COMM_ID, threads, descriptors and large messages.
#include "bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap_test_util.h"
#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket.h"

namespace braid {
namespace {

using namespace bootstrap_test;  // NOLINT(google-build-using-namespace): this family's helpers
using std::chrono::milliseconds;

TEST_F(BootstrapTest, UniqueIdLayout) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  uint64_t magic;
  std::memcpy(&magic, id.internal, 8);
  EXPECT_NE(magic, 0u);
  EXPECT_NE(magic, kCommIdMagic);
  SocketAddress addr;
  std::memcpy(&addr, id.internal + 8, sizeof(addr));
  EXPECT_EQ(addr.sa.sa_family, AF_INET);
  EXPECT_EQ(socketAddressToString(addr).rfind("127.0.0.1:", 0), 0u) << socketAddressToString(addr);
  for (size_t i = 36; i < sizeof(id.internal); ++i) EXPECT_EQ(id.internal[i], 0) << i;
  // Leave no root behind: a one-rank job completes it.
  auto outcomes = runChildren({0}, [&](int, std::string* text) { return exerciseBootstrap({id}, 1, 0, 1, text); });
  EXPECT_EQ(outcomes[0].result, 0) << describe(outcomes);
}

TEST_F(BootstrapTest, OneRank) {
  runAll(makeIds(1), 1);
  EXPECT_LT(lastMaxCreateMs_, 100);
}

TEST_F(BootstrapTest, TwoRanks) { runAll(makeIds(1), 2); }

TEST_F(BootstrapTest, FourRanksAreFast) {
  runAll(makeIds(1), 4);
  EXPECT_LT(lastMaxCreateMs_, 250);  // a few ms when the machine is idle
}

TEST_F(BootstrapTest, EightRanks) { runAll(makeIds(1), 8); }

TEST_F(BootstrapTest, ThirtyTwoRanks) { runAll(makeIds(1), 32); }

TEST_F(BootstrapTest, TwoRootsEightRanks) { runAll(makeIds(2), 8); }

TEST_F(BootstrapTest, ThreeRootsEightRanks) { runAll(makeIds(3), 8); }

TEST_F(BootstrapTest, AsManyRootsAsRanks) { runAll(makeIds(4), 4); }

TEST_F(BootstrapTest, CommIdMode) {
  SocketAddress port{};
  {
    SocketAddress lo{};
    lo.sin.sin_family = AF_INET;
    lo.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Socket probe;
    ASSERT_EQ(Socket::listen(lo, 1, SocketType::kBootstrap, &probe), ncclSuccess);
    port = probe.localAddress();
  }
  std::string where = socketAddressToString(port);
  setEnv("NCCL_COMM_ID", where.c_str());
  setEnv("NCCL_SOCKET_RETRY_SLEEP_MSEC", "10");
  // With a secret, a public magic is no warning matter.
  setEnv("BRAID_COMM_SECRET", "comm-id-mode-test-secret");
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  const unsigned char expected[] = {0x80, 0x02, 0x80, 0x02, 0x80, 0x02, 0x80, 0x02, 0x02, 0x00};
  EXPECT_EQ(std::memcmp(id.internal, expected, sizeof(expected)), 0);
  SocketAddress encoded;
  std::memcpy(&encoded, id.internal + 8, sizeof(encoded));
  EXPECT_EQ(socketAddressToString(encoded), where);
  runAll({id}, 4);
  // The same address serves a second job: rank 0's root closed, the port can be bound again.
  runAll({id}, 2);
}

// ncclCommSplit's ids: a root of this process even under NCCL_COMM_ID, whose address the parent
// communicator may still be using.
TEST_F(BootstrapTest, RootIdIgnoresCommId) {
  setEnv("NCCL_COMM_ID", "127.0.0.1:1");
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetRootUniqueId(&id), ncclSuccess);
  uint64_t magic;
  std::memcpy(&magic, id.internal, 8);
  EXPECT_NE(magic, kCommIdMagic);
  SocketAddress addr;
  std::memcpy(&addr, id.internal + 8, sizeof(addr));
  EXPECT_NE(socketAddressToString(addr), "127.0.0.1:1");
  runAll({id}, 3);
}

TEST_F(BootstrapTest, CommIdModeIpv6) {
  SocketAddress v6{};
  v6.sin6.sin6_family = AF_INET6;
  v6.sin6.sin6_addr = in6addr_loopback;
  Socket probe;
  if (Socket::listen(v6, 1, SocketType::kBootstrap, &probe) != ncclSuccess) GTEST_SKIP() << "no IPv6 loopback";
  std::string where = "[::1]:" + std::to_string(socketAddressPort(probe.localAddress()));
  probe.close();
  setEnv("NCCL_COMM_ID", where.c_str());
  setEnv("NCCL_SOCKET_RETRY_SLEEP_MSEC", "10");
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  // No secret: every rank WARNs once that anyone who reaches the address can join (unless the suite
  // runs over TLS, whose pre-shared key keeps strangers out: with_tls_key.sh).
  runAll({id}, 3, /*expectedWarns=*/getenv("BRAID_ENCRYPTION_PSK_FILE") != nullptr ? 0 : 1);
}

TEST_F(BootstrapTest, RanksAsThreadsOfOneProcess) {
  // ncclCommInitAll and group init run several ranks' creates at once in one process.
  const int kRanks = 8;
  std::vector<ncclUniqueId> ids = makeIds(2);
  std::vector<int> results(kRanks, -1);
  std::vector<std::string> texts(kRanks);
  std::vector<std::thread> threads;
  threads.reserve(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] { results[rank] = exerciseBootstrap(ids, seed_, rank, kRanks, &texts[rank]); });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(results[rank], 0) << "rank " << rank << ": " << texts[rank];
}

TEST_F(BootstrapTest, DefaultInterface) {
  // Whatever this host offers first (eth0 on a VM, lo in a bare container) must work.
  unsetenv("NCCL_SOCKET_IFNAME");
  paramsReset();
  runAll(makeIds(1), 3);
}

int countEntries(const char* dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST_F(BootstrapTest, NoDescriptorOrThreadLeaks) {
  // Children: every fd a Bootstrap opened is closed when it is destroyed, on success and failure.
  auto checkChild = [&](const std::vector<ncclUniqueId>& ids, int nranks) {
    return runChildren(iota(nranks), [&](int rank, std::string* text) {
      (void)logEnabled(LogLevel::kInfo, kLogBootstrap);  // the logger opens its file once, on first use
      int before = countEntries("/proc/self/fd");
      int rc = 0;
      {
        std::unique_ptr<Bootstrap> bs;
        rc = static_cast<int>(Bootstrap::create(ids.data(), static_cast<int>(ids.size()), rank, nranks, nullptr, &bs));
        if (rc == 0) rc = static_cast<int>(bs->barrier());
        if (rc == 0) rc = static_cast<int>(bs->broadcast(&rc, sizeof(rc), 0));
      }
      int after = countEntries("/proc/self/fd");
      if (before != after) {
        *text = "rank " + std::to_string(rank) + ": " + std::to_string(before) + " fds before, " +
                std::to_string(after) + " after";
        return kCheckFailed;
      }
      return rc;
    });
  };
  // Parent: the root thread and its sockets are gone once its job is done.
  (void)logEnabled(LogLevel::kInfo, kLogBootstrap);
  int fdsBefore = countEntries("/proc/self/fd");
  int threadsBefore = countEntries("/proc/self/task");
  std::vector<ncclUniqueId> ids = makeIds(2);
  for (const Outcome& o : checkChild(ids, 4)) EXPECT_EQ(o.result, 0) << o.text;
  ncclUniqueId garbageMagic = makeIds(1)[0];
  garbageMagic.internal[3] ^= 1;
  for (const Outcome& o : checkChild({garbageMagic}, 1)) EXPECT_EQ(o.result, ncclRemoteError) << o.text;
  ncclUniqueId zero{};
  for (const Outcome& o : checkChild({zero}, 1)) EXPECT_EQ(o.result, ncclInvalidUsage) << o.text;
  ASSERT_TRUE(waitUntilRootGone(ids[0], 5));
  ASSERT_TRUE(waitUntilRootGone(ids[1], 5));
  // The root of garbageMagic's id never saw a valid rank: end it with the real id's one-rank job.
  garbageMagic.internal[3] ^= 1;
  for (const Outcome& o : checkChild({garbageMagic}, 1)) EXPECT_EQ(o.result, 0) << o.text;
  ASSERT_TRUE(waitUntilRootGone(garbageMagic, 5));
  std::this_thread::sleep_for(milliseconds(50));  // let the last root thread finish exiting
  EXPECT_EQ(countEntries("/proc/self/fd"), fdsBefore);
  EXPECT_EQ(countEntries("/proc/self/task"), threadsBefore);
}

TEST_F(BootstrapTest, LargeMessagesDoNotDeadlock) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  const size_t kBig = 16 << 20;
  auto outcomes = runChildren(iota(2), [&](int rank, std::string* text) {
    std::unique_ptr<Bootstrap> bs;
    BOOTCHECK(Bootstrap::create(ids.data(), 1, rank, 2, nullptr, &bs));
    // Both ranks send first: only a send that keeps receiving meanwhile completes.
    std::vector<char> out(kBig, static_cast<char>(rank + 1)), in(kBig, 0);
    BOOTCHECK(bs->send(1 - rank, 5, out.data(), out.size()));
    BOOTCHECK(bs->recv(1 - rank, 5, in.data(), in.size()));
    DATACHECK(in == std::vector<char>(kBig, static_cast<char>(2 - rank)), "big message contents");
    const std::ptrdiff_t kSlot = 4 << 20;
    std::vector<char> slots(2 * kSlot, 0);
    std::fill(slots.begin() + rank * kSlot, slots.begin() + (rank + 1) * kSlot, static_cast<char>(rank + 7));
    BOOTCHECK(bs->allGather(slots.data(), kSlot));
    DATACHECK(slots[0] == 7 && slots.back() == 8, "big allGather");
    return 0;
  });
  for (const Outcome& o : outcomes) EXPECT_EQ(o.result, 0) << describe(outcomes);
}

}  // namespace
}  // namespace braid
