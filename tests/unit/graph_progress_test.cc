// Hang diagnosis of collectives captured in CUDA graphs, on the host: capture records, the wait
// notes a GPU leaves on the board, when the watch reports, looking at other ranks' boards, and the
// report's words. The kernels' side (DevWaitNotes) is covered by the GPU test
// (tests/gpu/hang_report_test.cc).
#include "watch/graph_progress.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "progress_board_test_util.h"
#include "watch/hang_watch.h"
#include "watch/progress_board.h"

namespace braid::watch {
namespace {

using Where = GraphRankProgress::Where;
using testutil::emptyBoard;

OpRecord capturedAllReduce(uint64_t count, int nChannels) {
  OpRecord r{};
  r.count = count;
  r.nChannels = nChannels;
  r.coll = static_cast<uint8_t>(CollId::kAllReduce);
  r.dtype = ncclInt32;
  r.op = ncclSum;
  return r;
}

// What a waiting CTA b of graph op `op` (capture `capture`) notes at one read of the abort flag.
void beat(ProgressBoard* b, int cta, uint64_t op, uint64_t capture) {
  b->graphWaits.op[cta] = op;
  b->graphWaits.capture[cta] = capture;
  b->graphWaits.beat[cta] += 1000;
}

TEST(GraphProgress, CapturesAreNumberedAndOldOnesForgotten) {
  auto b = emptyBoard();
  OpRecord r{};
  EXPECT_FALSE(captureRecordOf(*b, 1, &r));
  EXPECT_EQ(noteCapture(b.get(), capturedAllReduce(10, 2)), 1u);
  EXPECT_EQ(noteCapture(b.get(), capturedAllReduce(20, 4)), 2u);
  ASSERT_TRUE(captureRecordOf(*b, 2, &r));
  EXPECT_EQ(r.seq, 2u);
  EXPECT_EQ(r.count, 20u);
  EXPECT_FALSE(captureRecordOf(*b, 0, &r));
  EXPECT_FALSE(captureRecordOf(*b, 3, &r));
  for (int i = 0; i < kCapturesNoted; i++) noteCapture(b.get(), capturedAllReduce(30, 1));
  EXPECT_FALSE(captureRecordOf(*b, 2, &r));  // its slot holds capture kCapturesNoted + 2 now
  ASSERT_TRUE(captureRecordOf(*b, kCapturesNoted + 2, &r));
  EXPECT_EQ(r.count, 30u);
}

TEST(GraphProgress, CtasWaitNowWhileTheirBeatsMove) {
  auto b = emptyBoard();
  WaitBeats beats;
  uint64_t capture = 0;
  EXPECT_EQ(opWaitingNow(b->graphWaits, &beats, &capture), 0u);
  beat(b.get(), 3, 7, 2);
  beat(b.get(), 5, 6, 1);  // CTAs that disagree: the older op
  EXPECT_EQ(opWaitingNow(b->graphWaits, &beats, &capture), 6u);
  EXPECT_EQ(capture, 1u);
  EXPECT_EQ(opWaitingNow(b->graphWaits, &beats, &capture), 0u);  // no beat since
  beat(b.get(), 3, 7, 2);
  EXPECT_EQ(opWaitingNow(b->graphWaits, &beats, &capture), 7u);
  EXPECT_EQ(capture, 2u);
  EXPECT_EQ(graphProgressFrom(0, 7).where, Where::kNotWaiting);
  EXPECT_EQ(graphProgressFrom(7, 7).where, Where::kWaitingInIt);
  const GraphRankProgress elsewhere = graphProgressFrom(5, 7);
  EXPECT_EQ(elsewhere.where, Where::kWaitingElsewhere);
  EXPECT_EQ(elsewhere.op, 5u);
}

TEST(GraphProgress, AReportIsDueOnceAnOpHasBeenSeenWaitingPastTheThreshold) {
  auto b = emptyBoard();
  WaitWatch watch;
  uint64_t op = 0, capture = 0;
  int64_t since = 0;
  auto due = [&](int64_t now) { return waitReportDue(b->graphWaits, &watch, now, 100, &op, &capture, &since); };
  EXPECT_FALSE(due(1000));  // nothing waits
  beat(b.get(), 0, 1, 4);
  EXPECT_FALSE(due(1000));  // first seen now
  beat(b.get(), 0, 1, 4);
  EXPECT_FALSE(due(1050));
  beat(b.get(), 0, 1, 4);
  ASSERT_TRUE(due(1100));
  EXPECT_EQ(op, 1u);
  EXPECT_EQ(capture, 4u);
  EXPECT_EQ(since, 1000);
  beat(b.get(), 0, 1, 4);
  EXPECT_FALSE(due(9000));  // reported already
  // A wait that stops (the op completed) resets the clock; op 2's starts when it is seen.
  EXPECT_FALSE(due(9100));
  beat(b.get(), 1, 2, 4);
  EXPECT_FALSE(due(10'000));
  beat(b.get(), 1, 2, 4);
  ASSERT_TRUE(due(10'200));
  EXPECT_EQ(op, 2u);
  EXPECT_EQ(since, 10'000);
  // Short waits of op 3, seen at one check each, are never reported.
  beat(b.get(), 0, 3, 5);
  EXPECT_FALSE(due(20'000));
  EXPECT_FALSE(due(30'000));
  beat(b.get(), 0, 3, 5);
  EXPECT_FALSE(due(40'000));
}

TEST(GraphProgress, TheReportNamesTheCaptureAndTheRanksNotWaitingInIt) {
  OpRecord capture = capturedAllReduce(1048576, 8);
  capture.seq = 3;
  std::vector<GraphRankProgress> ranks(5);
  ranks[0] = graphProgressFrom(12, 12);
  ranks[1] = graphProgressFrom(0, 12);
  ranks[2] = graphProgressFrom(12, 12);
  ranks[3] = graphProgressFrom(11, 12);
  EXPECT_EQ(
      graphHangReport(12, &capture, 0.34, 0, ranks),
      "rank 0: graph op #12 of this communicator, captured AllReduce #3 (1048576 x int32, sum, 8 CTAs), has "
      "been waiting for 0.3 s. Waiting in it: ranks 0, 2. Waiting in another graph op: rank 3 (#11). Not "
      "waiting in a graph op: ranks 1. Not known (gone, or no answer from their host): ranks 4. Look at the ranks not "
      "waiting in it: their process has not replayed the graph as often as this one (or replayed graphs in "
      "another order), or is stuck before it.");
  for (GraphRankProgress& p : ranks) p = graphProgressFrom(12, 12);
  const std::string text = graphHangReport(12, nullptr, 1, 2, ranks);
  EXPECT_NE(text.find("rank 2: graph op #12 of this communicator, a captured collective, has been waiting"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Look at"), std::string::npos) << text;
}

// Ranks 1 and 2 have boards in shared memory (this process plays them; rank 1's CTAs beat while
// the watch looks, rank 2's stopped long ago); rank 3 is on another host.
TEST(GraphProgress, OtherRanksBoardsAreLookedAtTwice) {
  testutil::SharedBoards shared;
  ASSERT_TRUE(testutil::makeSharedBoards(0xabce000000000000ull, 4, &shared));
  const std::vector<ProgressBoard*>& boards = shared.boards;
  beat(boards[2], 0, 4, 2);  // an old note: it does not move
  std::atomic<bool> stop{false};
  std::thread beater([&] {
    while (!stop.load()) {
      beat(boards[1], 0, 5, 2);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const std::vector<GraphRankProgress> ranks = gatherGraphProgress(shared.hash, 0, shared.peers, 5, 50);
  stop = true;
  beater.join();
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(ranks[0].where, Where::kWaitingInIt);
  EXPECT_EQ(ranks[1].where, Where::kWaitingInIt);
  EXPECT_EQ(ranks[2].where, Where::kNotWaiting);
  EXPECT_EQ(ranks[3].where, Where::kUnknown);
}

}  // namespace
}  // namespace braid::watch
