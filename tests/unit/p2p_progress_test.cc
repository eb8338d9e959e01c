// Hang diagnosis of point-to-point kernels on the host: per-peer counts of posted sends and
// receives, the record of each launch, the choice of the launch a report is due for from the
// kernels' long-wait notes, matching against a peer's board in shared memory, and the report's
// words. The kernels' side (their p2pWaits notes) is covered by the GPU test hang_report_test.
#include "watch/p2p_progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "progress_board_test_util.h"
#include "util/shm_segment.h"
#include "watch/hang_watch.h"

namespace braid::watch {
namespace {

using testutil::emptyBoard;
using testutil::TestBoard;

P2pOpPosted send(int peer, uint64_t bytes) { return P2pOpPosted{peer, true, bytes}; }
P2pOpPosted recv(int peer, uint64_t bytes) { return P2pOpPosted{peer, false, bytes}; }

TEST(P2pProgress, EachPeerAndDirectionIsCountedAndEveryOperationGetsItsIndex) {
  TestBoard b = emptyBoard(4, 0);
  // Self operations are not counted (they never wait for anyone); a zero-byte one is, as its match is.
  EXPECT_EQ(noteP2pLaunch(b.get(), 2, 100, {send(1, 64), recv(1, 32), send(0, 8), recv(0, 8), send(1, 0)}), 1u);
  EXPECT_EQ(noteP2pLaunch(b.get(), 3, 200, {send(1, 16), recv(3, 16), recv(3, 16)}), 2u);
  const uint64_t* posted = p2pPosted(b.get());
  EXPECT_EQ(posted[1], 3u);      // sends to 1
  EXPECT_EQ(posted[4 + 1], 1u);  // receives from 1
  EXPECT_EQ(posted[4 + 3], 2u);  // receives from 3
  EXPECT_EQ(posted[0], 0u);
  EXPECT_EQ(posted[4 + 0], 0u);

  P2pRecord r{};
  ASSERT_TRUE(p2pRecordOf(*b.get(), 2, &r));
  EXPECT_EQ(r.nCtas, 3);
  ASSERT_EQ(r.nOps, 3);
  EXPECT_EQ(r.ops[0].index, 3u);  // the third send to rank 1
  EXPECT_EQ(r.ops[0].isSend, 1);
  EXPECT_EQ(r.ops[1].index, 1u);
  EXPECT_EQ(r.ops[2].index, 2u);
  EXPECT_EQ(r.ops[2].peer, 3);
  EXPECT_FALSE(p2pRecordOf(*b.get(), 3, &r));
  EXPECT_FALSE(p2pRecordOf(*b.get(), 0, &r));
}

TEST(P2pProgress, ALaunchOfManyOperationsNotesTheFirstFewAndCountsAll) {
  TestBoard b = emptyBoard(2, 0);
  std::vector<P2pOpPosted> ops(kP2pOpsNoted + 5, send(1, 4));
  noteP2pLaunch(b.get(), 1, 0, ops);
  P2pRecord r{};
  ASSERT_TRUE(p2pRecordOf(*b.get(), 1, &r));
  EXPECT_EQ(r.nOps, kP2pOpsNoted + 5);
  EXPECT_EQ(r.ops[kP2pOpsNoted - 1].index, static_cast<uint64_t>(kP2pOpsNoted));
  EXPECT_EQ(p2pPosted(b.get())[1], static_cast<uint64_t>(kP2pOpsNoted + 5));
  EXPECT_NE(p2pHangReport(r, 1, 0, std::vector<int64_t>(kP2pOpsNoted, 0)).find("; ...)"), std::string::npos);
}

// What a waiting CTA `cta` of point-to-point launch `seq` notes at one read of the abort flag.
void beat(ProgressBoard* b, int cta, uint64_t seq) {
  b->p2pWaits.op[cta] = seq;
  b->p2pWaits.beat[cta] += 1000;
}

uint64_t dueSeq(const ProgressBoard& b, WaitWatch* watch, int64_t nowNs, P2pRecord* r) {
  *r = P2pRecord{};
  return p2pReportDue(b, watch, nowNs, 100, r) ? r->seq : 0;
}

TEST(P2pProgress, AReportIsDueOnceWhenALaunchsCtasHaveWaitedLongEnough) {
  TestBoard b = emptyBoard(2, 0);
  WaitWatch watch;
  P2pRecord r{};
  EXPECT_EQ(dueSeq(*b.get(), &watch, 1'000'000, &r), 0u);  // nothing launched, nothing waits
  noteP2pLaunch(b.get(), 2, 100, {send(1, 8)});
  noteP2pLaunch(b.get(), 1, 500, {recv(1, 8)});
  EXPECT_EQ(dueSeq(*b.get(), &watch, 1'000'000, &r), 0u);  // launched long ago, but not seen waiting
  beat(b.get(), 1, 1);
  EXPECT_EQ(dueSeq(*b.get(), &watch, 2'000'000, &r), 0u);  // first seen waiting: its clock starts
  beat(b.get(), 1, 1);
  EXPECT_EQ(dueSeq(*b.get(), &watch, 2'000'050, &r), 0u);  // 50 ns of waiting
  EXPECT_EQ(dueSeq(*b.get(), &watch, 2'000'100, &r), 0u);  // its beat stopped: not waiting any more
  beat(b.get(), 0, 2);
  EXPECT_EQ(dueSeq(*b.get(), &watch, 3'000'000, &r), 0u);
  beat(b.get(), 0, 2);
  ASSERT_EQ(dueSeq(*b.get(), &watch, 3'000'100, &r), 2u);
  EXPECT_EQ(r.nOps, 1);  // its record
  EXPECT_EQ(r.launchNs, 500);
  EXPECT_EQ(r.ops[0].isSend, 0);
  beat(b.get(), 0, 2);
  EXPECT_EQ(dueSeq(*b.get(), &watch, 9'000'000, &r), 0u);  // reported already
}

TEST(P2pProgress, ALaunchWhoseRecordIsGoneIsStillReported) {
  TestBoard b = emptyBoard(2, 0);
  for (int i = 0; i < kRecentP2pLaunches + 2; i++) noteP2pLaunch(b.get(), 1, 100, {send(1, 8)});
  WaitWatch watch;
  P2pRecord r{};
  beat(b.get(), 0, 1);  // launch 1's slot holds launch kRecentP2pLaunches + 1 now
  EXPECT_EQ(dueSeq(*b.get(), &watch, 5'000, &r), 0u);
  beat(b.get(), 0, 1);
  ASSERT_EQ(dueSeq(*b.get(), &watch, 5'100, &r), 1u);
  EXPECT_EQ(r.nOps, 0);
  EXPECT_EQ(r.launchNs, 5'000);  // since it was seen waiting
  EXPECT_EQ(p2pHangReport(r, 2.5, 0, {}),
            "rank 0: point-to-point launch #1 (older than the 64 launches the board describes) has been waiting "
            "2.5 s.");
}

TEST(P2pProgress, CapturesAreNumberedApartAndNotCounted) {
  TestBoard b = emptyBoard(2, 0);
  EXPECT_EQ(noteP2pLaunch(b.get(), 1, 100, {send(1, 8)}), 1u);
  EXPECT_EQ(noteP2pCapture(b.get(), 2, {send(1, 64), recv(1, 32), send(0, 8)}), 1u);
  EXPECT_EQ(noteP2pCapture(b.get(), 1, {recv(1, 16)}), 2u);
  EXPECT_EQ(p2pPosted(b.get())[1], 1u);  // only the eager send: replays are not counted
  EXPECT_EQ(p2pPosted(b.get())[2 + 1], 0u);
  P2pRecord r{};
  ASSERT_TRUE(p2pCaptureRecordOf(*b.get(), 1, &r));
  EXPECT_EQ(r.nOps, 2);  // the self send is left out
  EXPECT_EQ(r.ops[0].index, 0u);
  EXPECT_EQ(r.ops[1].bytes, 32u);
  EXPECT_FALSE(p2pCaptureRecordOf(*b.get(), 3, &r));
  for (int i = 0; i < kP2pCapturesNoted; i++) noteP2pCapture(b.get(), 1, {send(1, 8)});
  EXPECT_FALSE(p2pCaptureRecordOf(*b.get(), 2, &r));  // its slot was reused
}

TEST(P2pProgress, AReplayThatWaitsIsReportedWithItsPeersWaits) {
  TestBoard b = emptyBoard(3, 0);
  noteP2pCapture(b.get(), 2, {send(1, 4096), recv(2, 128), send(1, 64)});
  WaitWatch eagerWatch;
  WaitWatch graphWatch;
  P2pRecord r{};
  b->p2pGraphWaits.op[0] = 1;  // CTA 0 of a replay of capture 1 waits
  b->p2pGraphWaits.beat[0] += 1000;
  EXPECT_FALSE(p2pReportDue(*b.get(), &eagerWatch, 2'000, 100, &r));
  EXPECT_FALSE(p2pGraphReportDue(*b.get(), &graphWatch, 2'000, 100, &r));
  b->p2pGraphWaits.beat[0] += 1000;
  EXPECT_FALSE(p2pReportDue(*b.get(), &eagerWatch, 2'100, 100, &r));  // no eager launch waits
  ASSERT_TRUE(p2pGraphReportDue(*b.get(), &graphWatch, 2'100, 100, &r));
  EXPECT_EQ(r.seq, 1u);
  EXPECT_EQ(r.nOps, 3);
  EXPECT_EQ(r.launchNs, 2'000);  // when the replay was first seen waiting
  EXPECT_EQ(p2pGraphHangReport(r, 1.5, 0, {-1, 0, 4}),
            "rank 0: a replay of point-to-point launch #1 captured in a CUDA graph (3 operations: send to rank 1 "
            "(4096 bytes); receive from rank 2 (128 bytes); send to rank 1 (64 bytes)) has been waiting for 1.5 s. "
            "Rank 1 waits in no replayed point-to-point launch. Rank 2 waits in a replay of its captured "
            "point-to-point launch #4. Look at the ranks that wait in none: their process has not replayed its graph "
            "as often as this one (or replayed graphs in another order), or is stuck before it.");
  EXPECT_EQ(p2pGraphHangReport(r, 1.5, 0, {-1, -1, 4}).find("Look at"), std::string::npos);
}

TEST(P2pProgress, AMatchIsThePeersCountInTheOtherDirection) {
  TestBoard mine = emptyBoard(3, 0);
  TestBoard peer = emptyBoard(3, 1);
  noteP2pLaunch(mine.get(), 1, 0, {send(1, 8), send(1, 8), recv(1, 8)});
  noteP2pLaunch(peer.get(), 1, 0, {recv(0, 8), send(0, 8), send(2, 8)});
  P2pRecord r{};
  ASSERT_TRUE(p2pRecordOf(*mine.get(), 1, &r));
  EXPECT_EQ(postedToward(*peer.get(), 0, r.ops[0]), 1u);  // it posted 1 receive from rank 0: send #1 matched
  EXPECT_EQ(postedToward(*peer.get(), 0, r.ops[1]), 1u);  // send #2 is not
  EXPECT_EQ(postedToward(*peer.get(), 0, r.ops[2]), 1u);  // its 1 send to rank 0 matches receive #1
}

TEST(P2pHangReport, NamesEveryOperationAndThePeersWhoseMatchIsMissing) {
  P2pRecord r{};
  r.seq = 7;
  r.nCtas = 3;
  r.nOps = 3;
  r.ops[0] = P2pOpNote{5, 4096, 1, 1};
  r.ops[1] = P2pOpNote{2, 128, 3, 0};
  r.ops[2] = P2pOpNote{9, 64, 2, 1};
  EXPECT_EQ(p2pHangReport(r, 61.25, 0, {4, 2, -1}),
            "rank 0: point-to-point launch #7 (3 operations: send #5 to rank 1 (4096 bytes); receive #2 from rank 3 "
            "(128 bytes); send #9 to rank 2 (64 bytes)) has not completed 61.2 s after its launch. Rank 1 has posted 4 "
            "receives from rank 0, so send #5 to rank 1 (4096 bytes) has no match yet. Rank 3 has posted the match of "
            "receive #2 from rank 3 (128 bytes). Rank 2: not known (gone, or no answer from its host). Look at the "
            "ranks whose "
            "match is missing: their code has not called the matching ncclSend/ncclRecv (a missing or reordered call, "
            "or a different peer), or is stuck before it.");
  // Every match posted: no advice about missing ones.
  EXPECT_EQ(p2pHangReport(r, 1, 0, {5, 2, 9}).find("Look at"), std::string::npos);
}

// Rank 1's board is in shared memory (this process plays it); rank 2 is on another host.
TEST(P2pHangWatch, MatchesAreReadFromThePeersBoards) {
  const uint64_t hash = 0xbcde000000000000ull | static_cast<uint64_t>(::getpid()) << 8 | (std::rand() & 0xff);
  const int pid = static_cast<int>(::getpid());
  ShmSegment segment;
  ASSERT_EQ(ShmSegment::create(progressBoardName(hash, 1, pid), progressBoardBytes(3), "test", &segment), ncclSuccess);
  auto* peerBoard = static_cast<ProgressBoard*>(segment.ptr());
  peerBoard->magic = kProgressBoardMagic;
  peerBoard->nRanks = 3;
  peerBoard->rank = 1;
  noteP2pLaunch(peerBoard, 1, 0, {recv(0, 8), recv(0, 8), send(0, 8)});

  std::vector<PeerProcess> peers(3);
  for (int r = 0; r < 3; r++) {
    peers[r].pid = pid;
    peers[r].pidSpace = r == 2 ? 77 : 42;
  }
  TestBoard own = emptyBoard(3, 0);
  noteP2pLaunch(own.get(), 2, 0, {send(1, 8), send(1, 8), send(1, 8), recv(1, 8), recv(2, 8)});
  P2pRecord r{};
  ASSERT_TRUE(p2pRecordOf(*own.get(), 1, &r));
  const std::vector<int64_t> matching = gatherMatches(hash, 0, peers, r);
  EXPECT_EQ(matching, (std::vector<int64_t>{2, 2, 2, 1, -1}));
  const std::string text = p2pHangReport(r, 2, 0, matching);
  EXPECT_NE(text.find("Rank 1 has posted 2 receives from rank 0, so send #3 to rank 1 (8 bytes) has no match yet."),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace braid::watch
