// Bootstrap when something goes wrong (bootstrap_test_util.h runs the ranks): ranks that never
// come, a root killed before or while ranks wait (the root in a child of its own), garbage, stale or
// foreign ids, mismatched sizes, duplicate ranks, bad arguments, a dead peer, the abort flag.
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

#include "bootstrap/bootstrap.h"
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

// Checks that the children at `which` (all if empty) failed with `result` within `maxSeconds`,
// each logging exactly one WARN, which contains `needle`. Prints one of the messages.
void expectFailed(const std::vector<Outcome>& outcomes, int result, const std::string& needle, double maxSeconds,
                  std::vector<size_t> which = {}) {
  if (which.empty()) {
    for (size_t i = 0; i < outcomes.size(); ++i) which.push_back(i);
  }
  for (size_t i : which) {
    const Outcome& o = outcomes[i];
    EXPECT_EQ(o.result, result) << "child " << i << describe(outcomes);
    EXPECT_LT(o.seconds, maxSeconds) << "child " << i << describe(outcomes);
    EXPECT_EQ(o.warns, 1) << "child " << i << describe(outcomes);
    EXPECT_NE(o.text.find(needle), std::string::npos) << "child " << i << describe(outcomes);
  }
  std::vector<std::string> shown;
  for (size_t i : which) {
    if (std::find(shown.begin(), shown.end(), outcomes[i].text) != shown.end()) continue;
    shown.push_back(outcomes[i].text);
    std::printf("  child %zu: %s\n", i, outcomes[i].text.c_str());
  }
}

// (a) Ranks that never come: the root names them, and the waiting ranks hear it from the root.
TEST_F(BootstrapTest, MissingRanksAreNamed) {
  setEnv("NCCL_BOOTSTRAP_TIMEOUT", "2");
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren({0, 1, 2, 4, 6, 7},
                              [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 8, text); });
  expectFailed(outcomes, ncclRemoteError, "ranks 3,5 of 8 never checked in after 2 s", 3.5);
  for (const Outcome& o : outcomes) EXPECT_GT(o.seconds, 1.5);
  // The root's own WARN, in this process.
  EXPECT_NE(std::string(logLastError()).find("ranks 3,5 of 8 never checked in"), std::string::npos) << logLastError();
}

TEST_F(BootstrapTest, MissingRankWithTwoRoots) {
  setEnv("NCCL_BOOTSTRAP_TIMEOUT", "2");
  std::vector<ncclUniqueId> ids = makeIds(2);
  auto outcomes = runChildren({0, 1, 2, 3, 4, 5, 7},
                              [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 8, text); });
  // Root 1 serves ranks 4-7 and knows that rank 6 is missing; root 0's ranks complete their
  // rendezvous and then fail in the ring, whose other half never forms.
  expectFailed(outcomes, ncclRemoteError, "rank 6 of 8 never checked in", 3.5, {4, 5, 6});
  // Rank 3 may instead see rank 4 exit while its connection waits for rank 4's handshake.
  expectFailed(outcomes, ncclRemoteError, " of 8", 3.5, {0, 1, 2, 3});
}

// (b) The root's process dies: before the ranks come (refused) or while they wait (closed).
pid_t startRootProcess(ncclUniqueId* id) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    ncclUniqueId made{};
    if (bootstrapGetUniqueId(&made) != ncclSuccess) _exit(1);
    if (::write(fds[1], &made, sizeof(made)) != static_cast<ssize_t>(sizeof(made))) _exit(1);
    for (;;) pause();
  }
  ::close(fds[1]);
  ssize_t n = ::read(fds[0], id, sizeof(*id));
  ::close(fds[0]);
  return n == static_cast<ssize_t>(sizeof(*id)) ? pid : -1;
}

TEST_F(BootstrapTest, RootKilledBeforeRanksCome) {
  ncclUniqueId id;
  pid_t root = startRootProcess(&id);
  ASSERT_GT(root, 0);
  kill(root, SIGKILL);
  waitpid(root, nullptr, 0);
  auto outcomes =
      runChildren(iota(2), [&](int rank, std::string* text) { return exerciseBootstrap({id}, 0, rank, 2, text); });
  expectFailed(outcomes, ncclRemoteError, "bootstrap root 0 of 1", 1.0);
  expectFailed(outcomes, ncclRemoteError, "refused", 1.0);
}

TEST_F(BootstrapTest, RootKilledWhileRanksWait) {
  ncclUniqueId id;
  pid_t root = startRootProcess(&id);
  ASSERT_GT(root, 0);
  auto outcomes = runChildren(
      {0, 1, 2}, [&](int rank, std::string* text) { return exerciseBootstrap({id}, 0, rank, 4, text); }, 40,
      [&] {
        std::this_thread::sleep_for(milliseconds(300));
        kill(root, SIGKILL);
        waitpid(root, nullptr, 0);
      });
  // Well before the 20 s timeout.
  expectFailed(outcomes, ncclRemoteError, "closed the connection without answering", 2.0);
}

// (c) Garbage and stale ids.
TEST_F(BootstrapTest, GarbageIdFailsAtOnce) {
  ncclUniqueId garbage;
  std::mt19937 random(seed_);
  for (char& c : garbage.internal) c = static_cast<char>(random() | 1);
  ncclUniqueId zero{};
  for (const ncclUniqueId& id : {garbage, zero}) {
    auto outcomes =
        runChildren(iota(2), [&](int rank, std::string* text) { return exerciseBootstrap({id}, 0, rank, 2, text); });
    expectFailed(outcomes, ncclInvalidUsage, "garbage or uninitialized", 0.5);
  }
}

TEST_F(BootstrapTest, WrongMagicAndSilentPeersDoNotConfuseTheRoot) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  ncclUniqueId impostor = ids[0];
  impostor.internal[0] ^= 0x5a;
  // A connection that never says anything, held open during the whole job.
  UniqueIdContents contents;
  ASSERT_EQ(uniqueIdDecode(ids[0], 0, 1, &contents), ncclSuccess);
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(silent, &contents.root.sa, socketAddressLength(contents.root)), 0);
  // Roles 0-3 are the real ranks; 100+ are processes with a corrupted id claiming ranks 0 and 1.
  auto outcomes = runChildren({100, 0, 1, 101, 2, 3}, [&](int role, std::string* text) {
    if (role >= 100) return exerciseBootstrap({impostor}, 0, role - 100, 4, text);
    // The real ranks come a little later, so that the root meets the impostors while it serves.
    std::this_thread::sleep_for(milliseconds(200));
    return exerciseBootstrap(ids, seed_, role, 4, text);
  });
  ::close(silent);
  expectFailed(outcomes, ncclRemoteError, "unique id is stale", 1.0, {0, 3});
  for (size_t i : {1, 2, 4, 5}) {
    EXPECT_EQ(outcomes[i].result, 0) << describe(outcomes);
    EXPECT_EQ(outcomes[i].warns, 0) << describe(outcomes);
  }
}

TEST_F(BootstrapTest, StaleIdIsRefused) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  runAll(ids, 2);
  ASSERT_TRUE(waitUntilRootGone(ids[0], 5));
  auto outcomes =
      runChildren(iota(2), [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 2, text); });
  expectFailed(outcomes, ncclRemoteError, "nothing listens there", 1.0);
}

// (d) nranks differs between ranks.
TEST_F(BootstrapTest, MismatchedNranks) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren(
      iota(4), [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, rank == 2 ? 5 : 4, text); });
  expectFailed(outcomes, ncclInvalidUsage, "nranks=5", 1.0);
  expectFailed(outcomes, ncclInvalidUsage, "nranks=4", 1.0);
  expectFailed(outcomes, ncclInvalidUsage, "rank 2", 1.0);
}

// (e) Two processes claim one rank.
TEST_F(BootstrapTest, DuplicateRank) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes =
      runChildren({0, 1, 1, 3}, [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 4, text); });
  expectFailed(outcomes, ncclInvalidUsage, "rank 1 was claimed twice", 1.0);
}

TEST_F(BootstrapTest, InvalidArguments) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  std::unique_ptr<Bootstrap> bs;
  EXPECT_EQ(Bootstrap::create(ids.data(), 1, 2, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(ids.data(), 1, -1, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(ids.data(), 0, 0, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(ids.data(), 3, 0, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(nullptr, 1, 0, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(bootstrapGetUniqueId(nullptr), ncclInvalidArgument);
  // Complete the id's job so that its root does not linger.
  runAll(ids, 1);
}

TEST_F(BootstrapTest, RecvSizeMismatchNamesBothSizes) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren(iota(2), [&](int rank, std::string* text) {
    std::unique_ptr<Bootstrap> bs;
    BOOTCHECK(Bootstrap::create(ids.data(), 1, rank, 2, nullptr, &bs));
    char data[16] = {};
    if (rank == 0) {
      BOOTCHECK(bs->send(1, 7, data, sizeof(data)));
      return static_cast<int>(bs->recv(1, 8, data, 1));  // wait for rank 1 to be done
    }
    ncclResult_t rc = bs->recv(0, 7, data, 8);
    *text = logLastError();
    char ack = 1;
    BOOTCHECK(bs->send(0, 8, &ack, 1));
    return static_cast<int>(rc);
  });
  EXPECT_EQ(outcomes[0].result, 0) << describe(outcomes);
  expectFailed(outcomes, ncclInvalidUsage, "rank 0 sent 16 bytes but this rank expects 8 (message truncated)", 1.0,
               {1});
}

TEST_F(BootstrapTest, DeadPeerIsNoticedQuickly) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren(iota(3), [&](int rank, std::string* text) {
    std::unique_ptr<Bootstrap> bs;
    BOOTCHECK(Bootstrap::create(ids.data(), 1, rank, 3, nullptr, &bs));
    if (rank == 2) return 0;  // leaves: its connections close
    if (rank == 1) return 0;
    int64_t value;
    return static_cast<int>(bs->recv(2, 5, &value, sizeof(value)));
  });
  expectFailed(outcomes, ncclRemoteError, "rank 2 closed its bootstrap connection", 2.0, {0});
}

TEST_F(BootstrapTest, AbortFlagStopsCreate) {
  setEnv("NCCL_BOOTSTRAP_TIMEOUT", "2");
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren({0}, [&](int rank, std::string*) {
    std::atomic<int> abortFlag{0};
    std::thread aborter([&] {
      std::this_thread::sleep_for(milliseconds(200));
      abortFlag.store(1);
    });
    std::unique_ptr<Bootstrap> bs;
    ncclResult_t rc = Bootstrap::create(ids.data(), 1, rank, 2, &abortFlag, &bs);
    aborter.join();
    return static_cast<int>(rc);
  });
  EXPECT_EQ(outcomes[0].result, ncclInternalError) << describe(outcomes);
  EXPECT_EQ(outcomes[0].warns, 0) << describe(outcomes);  // an abort is not a failure
  EXPECT_LT(outcomes[0].seconds, 0.6);
  EXPECT_GT(outcomes[0].seconds, 0.15);
  EXPECT_TRUE(waitUntilRootGone(ids[0], 4));
}

}  // namespace
}  // namespace braid
