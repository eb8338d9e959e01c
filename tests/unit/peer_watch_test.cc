// Dead-peer detection (core/peer_watch.h): a live process is not gone, a zombie and a reaped one
// are; only peers in this process's pid space are judged, never the rank itself or its process.
// And the watch's walk over the communicators (core/comm_registry.h): a slow visit (a hang report)
// blocks no API call's handle check, and removing the visited communicator waits for the visit.
#include "core/peer_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/comm_registry.h"

namespace braid {
namespace {

pid_t forkSleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

PeerInfo peer(int rank, int pid, uint64_t pidSpace) {
  PeerInfo p{};
  p.rank = rank;
  p.pid = pid;
  p.pidSpace = pidSpace;
  return p;
}

TEST(PeerWatch, LiveZombieAndReapedProcesses) {
  EXPECT_FALSE(processGone(::getpid()));
  pid_t child = forkSleeper();
  ASSERT_GT(child, 0);
  EXPECT_FALSE(processGone(child));
  ::kill(child, SIGKILL);
  // Not reaped yet: a zombie, which counts as gone.
  bool zombie = false;
  for (int i = 0; i < 200 && !zombie; i++) {
    zombie = processGone(child);
    if (!zombie) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(zombie);
  int status = 0;
  ASSERT_EQ(child, ::waitpid(child, &status, 0));
  EXPECT_TRUE(processGone(child));
  EXPECT_FALSE(processGone(0));
  EXPECT_FALSE(processGone(-1));
}

TEST(PeerWatch, OnlyPeersOfThisPidSpaceAreJudged) {
  const uint64_t space = localPidSpace();
  if (space == 0) GTEST_SKIP() << "no boot id or pid namespace here: dead-peer detection is off on such hosts";
  pid_t live = forkSleeper();
  pid_t dead = forkSleeper();
  ASSERT_GT(live, 0);
  ASSERT_GT(dead, 0);
  ::kill(dead, SIGKILL);
  ASSERT_EQ(dead, ::waitpid(dead, nullptr, 0));
  const int self = ::getpid();
  // A rank of another pid space with the dead pid is not ours to judge; a thread rank (our pid) is
  // never dead.
  std::vector<PeerInfo> peers = {peer(0, self, space), peer(1, self, space), peer(2, dead, space + 1),
                                 peer(3, live, space)};
  EXPECT_EQ(-1, firstDeadPeer(peers, 0));
  peers.push_back(peer(4, dead, space));
  EXPECT_EQ(4, firstDeadPeer(peers, 0));
  EXPECT_EQ(4, firstDeadPeer(peers, 3));
  peers[0].pidSpace = 0;  // our own space unknown: nobody is judged
  EXPECT_EQ(-1, firstDeadPeer(peers, 0));
  EXPECT_EQ(-1, firstDeadPeer(peers, 9));
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
}

TEST(CommRegistry, ASlowVisitBlocksOthersNotAndItsCommunicatorsRemovalWaitsForIt) {
  // The registry never dereferences its pointers: any distinct addresses serve as communicators.
  char slots[3];
  const auto* visited = reinterpret_cast<const ncclComm*>(&slots[0]);
  const auto* other = reinterpret_cast<const ncclComm*>(&slots[1]);
  const auto* added = reinterpret_cast<const ncclComm*>(&slots[2]);
  commRegistryAdd(visited);
  commRegistryAdd(other);
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::thread watch([&] {
    commRegistryForEach([&](ncclComm* comm) {
      if (comm != visited) return;
      started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      finished = true;
    });
  });
  while (!started) std::this_thread::yield();
  const auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(commRegistryContains(other));
  commRegistryAdd(added);
  commRegistryRemove(other);
  EXPECT_FALSE(commRegistryContains(other));
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(200));
  EXPECT_FALSE(finished.load());
  commRegistryRemove(visited);
  EXPECT_TRUE(finished.load());
  EXPECT_FALSE(commRegistryContains(visited));
  watch.join();
  commRegistryRemove(added);
}

}  // namespace
}  // namespace braid
