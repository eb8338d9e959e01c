// Dead-peer detection (watch/peer_watch.h): a live process is not gone, a zombie and a reaped one
// are; only peers in this process's pid space are judged, never the rank itself or its process.
// And the watch thread's walk over the communicators' watches: a slow visit (a hang report) blocks
// no other watch's start or stop, and stopping the visited one waits for the visit.
#include "watch/peer_watch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "core/peer_info.h"

namespace braid::watch {
namespace {

pid_t forkSleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

PeerProcess peer(int pid, uint64_t pidSpace) {
  PeerProcess p{};
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
  std::vector<PeerProcess> peers = {peer(self, space), peer(self, space), peer(dead, space + 1), peer(live, space)};
  EXPECT_EQ(-1, firstDeadPeer(peers, 0));
  peers.push_back(peer(dead, space));
  EXPECT_EQ(4, firstDeadPeer(peers, 0));
  EXPECT_EQ(4, firstDeadPeer(peers, 3));
  peers[0].pidSpace = 0;  // our own space unknown: nobody is judged
  EXPECT_EQ(-1, firstDeadPeer(peers, 0));
  EXPECT_EQ(-1, firstDeadPeer(peers, 9));
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
}

TEST(WatchThread, ASlowVisitBlocksOthersNotAndStoppingItsWatchWaitsForIt) {
  // The set never dereferences its pointers: any distinct addresses serve as watches.
  char slots[3];
  auto* visited = reinterpret_cast<CommWatch*>(&slots[0]);
  auto* other = reinterpret_cast<CommWatch*>(&slots[1]);
  auto* added = reinterpret_cast<CommWatch*>(&slots[2]);
  addWatched(visited);
  addWatched(other);
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::thread watch([&] {
    forEachWatched([&](CommWatch* w) {
      if (w != visited) return;
      started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      finished = true;
    });
  });
  while (!started) std::this_thread::yield();
  const auto before = std::chrono::steady_clock::now();
  addWatched(added);
  removeWatched(other);
  waitOutVisit(added);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(200));
  EXPECT_FALSE(finished.load());
  removeWatched(visited);
  EXPECT_TRUE(finished.load());
  watch.join();
  removeWatched(added);
}

// What the watch reads of a peer is what it told at init, its board server's secret included.
TEST(PeerWatch, PeerProcessIsWhatThePeerTold) {
  PeerInfo info{};
  info.pid = 4321;
  info.cudaDev = 3;
  info.hostHash = 0x1111;
  info.pidSpace = 0x2222;
  info.boardServer.address.sin.sin_family = AF_INET;
  info.boardServer.address.sin.sin_port = htons(5555);
  for (size_t i = 0; i < kBoardSecretBytes; i++) info.boardServer.secret[i] = static_cast<uint8_t>(i + 1);
  const PeerProcess p = peerProcessOf(info);
  EXPECT_EQ(p.pid, 4321);
  EXPECT_EQ(p.cudaDev, 3);
  EXPECT_EQ(p.hostHash, 0x1111u);
  EXPECT_EQ(p.pidSpace, 0x2222u);
  EXPECT_EQ(socketAddressPort(p.boardServer.address), 5555);
  EXPECT_EQ(0, std::memcmp(p.boardServer.secret, info.boardServer.secret, kBoardSecretBytes));
}

}  // namespace
}  // namespace braid::watch
