// Hang diagnosis on the host: progress boards (what a rank launched and where its kernels noted
// long waits), the choice of the operation a report is due for, reading other ranks' boards from
// shared memory and, for ranks on other hosts, from their processes' board servers over TCP, and
// the report's words. The kernels' side (DevWaitNotes writes) is covered by the
// GPU tests (tests/gpu/hang_report_test.cc).
#include "core/hang_watch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/board_server.h"
#include "core/hang_report.h"
#include "core/progress_board.h"
#include "device/dev_types.h"
#include "progress_board_test_util.h"
#include "util/shm_segment.h"

namespace braid {
namespace {

using Where = RankProgress::Where;

OpRecord op(uint64_t seq, int nChannels, CollId coll = CollId::kAllReduce, int64_t launchNs = 1000) {
  OpRecord r{};
  r.seq = seq;
  r.count = 1024 * seq;
  r.launchNs = launchNs;
  r.nChannels = nChannels;
  r.coll = static_cast<uint8_t>(coll);
  r.dtype = ncclFloat32;
  r.op = ncclSum;
  return r;
}

using testutil::emptyBoard;

// What a waiting CTA of eager operation `seq` notes at one read of the abort flag.
void beat(ProgressBoard* b, int cta, uint64_t seq) {
  b->eagerWaits.op[cta] = seq;
  b->eagerWaits.capture[cta] = seq;
  b->eagerWaits.beat[cta] += 1000;
}

TEST(ProgressBoard, WhereARankIsFollowsItsLaunchesAndTheOperationItsCtasWaitIn) {
  auto b = emptyBoard();
  EXPECT_EQ(progressOf(b.get(), 1, 0).where, Where::kNotLaunched);
  noteLaunch(b.get(), op(1, 2, CollId::kAllReduce, 100));
  noteLaunch(b.get(), op(2, 4, CollId::kAllReduce, 700));
  EXPECT_EQ(launchedThrough(*b), 2u);
  const RankProgress notYet = progressOf(b.get(), 3, 2);
  EXPECT_EQ(notYet.where, Where::kNotLaunched);
  EXPECT_EQ(notYet.launched, 2u);
  EXPECT_EQ(notYet.lastLaunchNs, 700);
  EXPECT_EQ(progressOf(b.get(), 1, 0).where, Where::kNotWaiting);
  EXPECT_EQ(progressOf(b.get(), 2, 2).where, Where::kWaitingInIt);
  const RankProgress earlier = progressOf(b.get(), 2, 1);
  EXPECT_EQ(earlier.where, Where::kWaitingElsewhere);
  EXPECT_EQ(earlier.waitingOp, 1u);
  EXPECT_EQ(progressOf(b.get(), 1, 2).where, Where::kDone);  // its kernels run in order
  // The last-launch event was recorded after launch 2; the watch saw it complete before 2 was
  // recorded, so only 1 is known done, and `completed` never goes back.
  EXPECT_EQ(recordedThrough(*b), 0u);
  noteCompleted(b.get(), 1);
  noteRecorded(b.get(), 2);
  EXPECT_EQ(recordedThrough(*b), 2u);
  EXPECT_EQ(completedThrough(*b), 1u);
  EXPECT_EQ(progressOf(b.get(), 1, 0).where, Where::kDone);
  EXPECT_EQ(progressOf(b.get(), 2, 0).where, Where::kNotWaiting);
  noteCompleted(b.get(), 2);
  noteCompleted(b.get(), 1);
  EXPECT_EQ(completedThrough(*b), 2u);
  EXPECT_EQ(progressOf(b.get(), 2, 0).where, Where::kDone);
}

TEST(ProgressBoard, OldRecordsAreOverwrittenAndNotMistakenForNewOnes) {
  auto b = emptyBoard();
  const uint64_t n = kRecentOps + 5;
  for (uint64_t s = 1; s <= n; s++) noteLaunch(b.get(), op(s, 1));
  OpRecord r{};
  EXPECT_FALSE(recordOf(*b, 5, &r));  // its slot holds kRecentOps + 5 now
  EXPECT_FALSE(recordOf(*b, 0, &r));
  EXPECT_FALSE(recordOf(*b, n + 1, &r));
  ASSERT_TRUE(recordOf(*b, 6, &r));
  EXPECT_EQ(r.seq, 6u);
  ASSERT_TRUE(recordOf(*b, n, &r));
  EXPECT_EQ(r.count, 1024 * n);
  EXPECT_EQ(progressOf(nullptr, 1, 0).where, Where::kUnknown);
  b->magic = 0;  // not a board (yet)
  EXPECT_EQ(progressOf(b.get(), 1, 0).where, Where::kUnknown);
}

TEST(HangWatch, AReportIsDueOnceTheGpuHasWaitedInAnOperationPastTheThreshold) {
  auto b = emptyBoard();
  WaitWatch watch;
  uint64_t seq = 0, capture = 0;
  int64_t since = 0;
  auto due = [&](int64_t now) { return waitReportDue(b->eagerWaits, &watch, now, 100, &seq, &capture, &since); };
  noteLaunch(b.get(), op(1, 2, CollId::kAllReduce, 10));
  EXPECT_FALSE(due(1000));  // launched long ago, but no CTA waits: it may be queued or done
  beat(b.get(), 1, 1);
  EXPECT_FALSE(due(1000));  // first seen waiting now
  beat(b.get(), 1, 1);
  EXPECT_FALSE(due(1050));
  beat(b.get(), 1, 1);
  ASSERT_TRUE(due(1100));
  EXPECT_EQ(seq, 1u);
  EXPECT_EQ(since, 1000);
  beat(b.get(), 1, 1);
  EXPECT_FALSE(due(5000));  // reported already
}

TEST(HangReport, NamesTheOperationAndWhereEveryRankIs) {
  EXPECT_EQ(rankList({}, kReportRanks), "");
  EXPECT_EQ(rankList({3}, kReportRanks), "3");
  EXPECT_EQ(rankList({0, 1}, kReportRanks), "0, 1");
  EXPECT_EQ(rankList({0, 1, 2, 3, 5, 7, 8, 9}, kReportRanks), "0-3, 5, 7-9");

  OpRecord r = op(42, 8);
  r.count = 1048576;
  EXPECT_EQ(describeOp(r), "AllReduce #42 (1048576 x float32, sum, 8 CTAs)");
  OpRecord bcast = op(7, 2, CollId::kBroadcast);
  bcast.dtype = ncclBfloat16;
  bcast.root = 3;
  bcast.count = 10;
  EXPECT_EQ(describeOp(bcast), "Broadcast #7 (10 x bfloat16, root 3, 2 CTAs)");
  OpRecord user = op(9, 1, CollId::kReduceScatter);
  user.userOp = 1;
  user.count = 5;
  EXPECT_EQ(describeOp(user), "ReduceScatter #9 (5 x float32, premulsum, 1 CTAs)");

  std::vector<RankProgress> ranks(8);
  ranks[0].where = Where::kWaitingInIt;
  ranks[1].where = Where::kWaitingInIt;
  ranks[2].where = Where::kNotLaunched;
  ranks[2].launched = 41;
  ranks[2].lastLaunchNs = 2'000'000'000;
  ranks[3].where = Where::kNotWaiting;
  ranks[4].where = Where::kNotWaiting;
  ranks[5].where = Where::kUnknown;
  ranks[6].where = Where::kWaitingElsewhere;
  ranks[6].waitingOp = 40;
  ranks[7].where = Where::kDone;
  const std::string text = hangReport(42, &r, 61.25, 0, ranks, 5'000'000'000);
  EXPECT_EQ(
      text,
      "rank 0: AllReduce #42 (1048576 x float32, sum, 8 CTAs) has not completed 61.2 s after its launch. Not "
      "launched by: rank 2 (its last: #41, launched 3.0 s ago). Waiting in it: ranks 0, 1. Waiting in an "
      "earlier collective: rank 6 (#40). Done with it: ranks 7. Launched it, waiting in no collective, not seen done "
      "(their GPU has not begun it: earlier work on its stream; or it has just ended): ranks 3, 4. Not known "
      "(gone, or no answer from their host): ranks 5. Look at the ranks that have not launched it: their code has not "
      "called it (a skipped or reordered collective), or is stuck before it.");
  // Everyone launched it: no advice about the ranks that did not. Its record gone: its number.
  for (RankProgress& p : ranks) p.where = Where::kWaitingInIt;
  const std::string waiting = hangReport(42, nullptr, 1, 3, ranks, 0);
  EXPECT_EQ(waiting.find("Look at"), std::string::npos);
  EXPECT_EQ(waiting.find("rank 3: collective #42 has waited 1.0 s. Waiting in it: ranks 0-7."), 0u) << waiting;
}

// Ranks 1 and 2 have boards in shared memory (this process plays them: rank 1 launched operation 5
// and its CTAs beat in it while the watch looks; rank 2 launched 4 only, and its note of 3 is old),
// rank 3 is on another host, rank 4 made none.
TEST(HangWatch, OtherRanksBoardsAreReadFromSharedMemoryAndTheirWaitsLookedAtTwice) {
  testutil::SharedBoards shared;
  ASSERT_TRUE(testutil::makeSharedBoards(0xabcd000000000000ull, 5, &shared));
  const uint64_t hash = shared.hash;
  const int pid = static_cast<int>(::getpid());
  const std::vector<ProgressBoard*>& boards = shared.boards;
  const std::vector<PeerInfo>& peers = shared.peers;
  for (int r = 1; r <= 2; r++) {
    for (uint64_t s = 1; s <= (r == 1 ? 5u : 4u); s++) noteLaunch(boards[r], op(s, 1));
  }
  beat(boards[2], 0, 3);
  auto own = emptyBoard(5);
  for (uint64_t s = 1; s <= 5; s++) noteLaunch(own.get(), op(s, 1));

  std::atomic<bool> stop{false};
  std::thread beater([&] {
    while (!stop.load()) {
      beat(boards[1], 2, 5);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const std::vector<RankProgress> ranks = gatherProgress(hash, 0, peers, *own, 5, 50);
  const RankProgress rank1On4 = gatherProgress(hash, 0, peers, *own, 4, 50)[1];
  stop = true;
  beater.join();
  ASSERT_EQ(ranks.size(), 5u);
  EXPECT_EQ(ranks[0].where, Where::kWaitingInIt);  // the reporting rank
  EXPECT_EQ(ranks[1].where, Where::kWaitingInIt);
  EXPECT_EQ(ranks[2].where, Where::kNotLaunched);
  EXPECT_EQ(ranks[2].launched, 4u);
  EXPECT_EQ(ranks[3].where, Where::kUnknown);  // another pid space
  EXPECT_EQ(ranks[4].where, Where::kUnknown);  // no board
  EXPECT_EQ(rank1On4.where, Where::kDone);     // it waits in 5, so it is done with 4
  EXPECT_EQ(rank1On4.waitingOp, 5u);
  // Once its beats stop, nothing moves between the two looks: not waiting.
  EXPECT_EQ(gatherProgress(hash, 0, peers, *own, 5, 10)[1].where, Where::kNotWaiting);
  ShmSegment missing;
  EXPECT_NE(ShmSegment::openReadOnly(progressBoardName(hash, 4, pid), progressBoardBytes(5), &missing), ncclSuccess);
  EXPECT_NE(ShmSegment::openReadOnly(progressBoardName(hash, 1, pid), progressBoardBytes(5) * 2, &missing),
            ncclSuccess);
  // A board of a communicator of another size (a stale segment) is not read.
  EXPECT_EQ(gatherProgress(hash, 0, std::vector<PeerInfo>(peers.begin(), peers.begin() + 3), *own, 5, 0)[1].where,
            Where::kUnknown);
}

// A board server answers with a copy of the board a request names, and with nothing for boards it
// does not have (another rank, another size, another communicator).
TEST(BoardServer, AnswersWithACopyOfTheBoardAskedFor) {
  testutil::SharedBoards shared;
  ASSERT_TRUE(testutil::makeSharedBoards(0xabce000000000000ull, 5, &shared));
  ProgressBoard* board1 = shared.boards[1];
  board1->rank = 1;
  for (uint64_t s = 1; s <= 3; s++) noteLaunch(board1, op(s, 2, CollId::kAllGather, monotonicNs()));
  const SocketAddress server = boardServerAddress();
  ASSERT_TRUE(socketAddressIsValid(server)) << "hang reports are on by default, so the server runs";
  EXPECT_EQ(socketAddressPort(server), socketAddressPort(boardServerAddress())) << "one server per process";

  FetchedBoard copy;
  const Deadline deadline = Deadline::after(std::chrono::milliseconds(5000));
  ASSERT_TRUE(fetchBoard(server, shared.hash, 1, 5, deadline, &copy));
  ASSERT_EQ(copy.words.size() * sizeof(uint64_t), progressBoardBytes(5));
  EXPECT_EQ(0, std::memcmp(copy.words.data(), board1, progressBoardBytes(5)));
  EXPECT_EQ(launchedThrough(*copy.board()), 3u);
  // One host, one clock: the offset is the request's half round trip at most.
  EXPECT_LT(std::abs(copy.clockOffsetNs), 100000000);

  FetchedBoard none;
  EXPECT_FALSE(fetchBoard(server, shared.hash, 2, 5, deadline, &none)) << "rank 2's board says rank 0";
  EXPECT_FALSE(fetchBoard(server, shared.hash, 4, 5, deadline, &none)) << "no board of rank 4";
  EXPECT_FALSE(fetchBoard(server, shared.hash, 1, 6, deadline, &none)) << "a communicator of 6 ranks";
  EXPECT_FALSE(fetchBoard(server, shared.hash ^ 1, 1, 5, deadline, &none)) << "another communicator";
  EXPECT_FALSE(fetchBoard(SocketAddress{}, shared.hash, 1, 5, deadline, &none)) << "no server";
}

// Ranks on other hosts (another host identity: real hosts, or NCCL_HOSTID) are asked over TCP, twice
// for a report's two looks: rank 1's board comes from this process's board server (this process
// plays it), and its CTAs beat between the looks, so it waits in the operation like a rank on this
// host; rank 3's server is gone (a port nobody listens on), so it is not known, and quickly.
TEST(HangWatch, OtherHostsBoardsAreFetchedFromTheirBoardServers) {
  testutil::SharedBoards shared;
  ASSERT_TRUE(testutil::makeSharedBoards(0xabcf000000000000ull, 4, &shared));
  ProgressBoard* board1 = shared.boards[1];
  board1->rank = 1;
  const int64_t launchedNs = monotonicNs();
  for (uint64_t s = 1; s <= 5; s++) noteLaunch(board1, op(s, 1, CollId::kAllReduce, launchedNs));
  std::vector<PeerInfo> peers = shared.peers;
  peers[1].hostHash = 11;
  peers[1].boardServer = boardServerAddress();
  peers[3].hostHash = 33;
  {
    Socket closed;  // a port that was listened on and is no more
    SocketAddress local{};
    local.sin.sin_family = AF_INET;
    local.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(ncclSuccess, Socket::listen(local, 1, SocketType::kRas, &closed));
    peers[3].boardServer = closed.localAddress();
  }
  auto own = emptyBoard(4);
  for (uint64_t s = 1; s <= 5; s++) noteLaunch(own.get(), op(s, 1));

  std::atomic<bool> stop{false};
  std::thread beater([&] {
    while (!stop.load()) {
      beat(board1, 0, 5);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  const std::vector<RankProgress> ranks = gatherProgress(shared.hash, 0, peers, *own, 5, 50);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  beater.join();
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(ranks[1].where, Where::kWaitingInIt);
  EXPECT_EQ(ranks[1].launched, 5u);
  EXPECT_NEAR(static_cast<double>(ranks[1].lastLaunchNs - launchedNs), 0.0, 1e8) << "moved onto this host's clock";
  EXPECT_EQ(ranks[2].where, Where::kNotLaunched);  // on this host: read from shared memory
  EXPECT_EQ(ranks[3].where, Where::kUnknown);
  EXPECT_LT(seconds, 1.5) << "a refused connection is not waited for";
  // Without beats between the two looks, the copy says what a mapped board would: not waiting.
  EXPECT_EQ(gatherProgress(shared.hash, 0, peers, *own, 5, 10)[1].where, Where::kNotWaiting);
}

}  // namespace
}  // namespace braid
