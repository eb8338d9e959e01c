// Hang diagnosis on the host: progress boards (what a rank launched and what its kernels noted), the
// choice of the operation a report is due for, reading other ranks' boards from shared memory, and
// the report's words. The kernels' side (DevProgress writes) is covered by the GPU tests.
#include "core/hang_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

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
using testutil::TestBoard;

TEST(ProgressBoard, WhereARankIsFollowsLaunchesStartsAndEveryCtaLeaving) {
  auto b = emptyBoard();
  EXPECT_EQ(completedThrough(*b), 0u);
  EXPECT_EQ(progressOf(b.get(), 1).where, Where::kNotLaunched);
  noteLaunch(b.get(), op(1, 2));
  noteLaunch(b.get(), op(2, 4));
  EXPECT_EQ(launchedThrough(*b), 2u);
  EXPECT_EQ(progressOf(b.get(), 1).where, Where::kQueued);
  EXPECT_EQ(progressOf(b.get(), 3).where, Where::kNotLaunched);
  EXPECT_EQ(progressOf(b.get(), 3).launched, 2u);

  b->dev.started = 1;
  b->dev.ctaDone[0] = 1;  // CTA 1 of op 1 has not left
  EXPECT_EQ(completedThrough(*b), 0u);
  EXPECT_EQ(progressOf(b.get(), 1).where, Where::kRunning);
  b->dev.ctaDone[1] = 1;
  EXPECT_EQ(completedThrough(*b), 1u);
  EXPECT_EQ(progressOf(b.get(), 1).where, Where::kDone);
  EXPECT_EQ(progressOf(b.get(), 2).where, Where::kQueued);

  // Op 2 has 4 CTAs: three left, one still in it.
  b->dev.started = 2;
  for (int c = 0; c < 3; c++) b->dev.ctaDone[c] = 2;
  EXPECT_EQ(progressOf(b.get(), 2).where, Where::kRunning);
  EXPECT_EQ(completedThrough(*b), 1u);
  b->dev.ctaDone[3] = 2;
  EXPECT_EQ(completedThrough(*b), 2u);
  EXPECT_EQ(progressOf(b.get(), 2).where, Where::kDone);
  // A later operation that began implies every earlier one ended, whatever CTAs it used.
  noteLaunch(b.get(), op(3, 1));
  b->dev.started = 3;
  EXPECT_EQ(completedThrough(*b), 2u);
  EXPECT_EQ(progressOf(b.get(), 2).where, Where::kDone);
  EXPECT_EQ(progressOf(b.get(), 3).where, Where::kRunning);
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
  EXPECT_EQ(progressOf(nullptr, 1).where, Where::kUnknown);
  b->magic = 0;  // not a board (yet)
  EXPECT_EQ(progressOf(b.get(), 1).where, Where::kUnknown);
}

// The operation a report is due for (0: none).
uint64_t dueSeq(const ProgressBoard& b, uint64_t reported, int64_t nowNs, int64_t thresholdNs) {
  OpRecord r{};
  return hangReportDue(b, reported, nowNs, thresholdNs, &r) ? r.seq : 0;
}

TEST(HangWatch, AReportIsDueOnceForTheOldestIncompleteOperationPastTheThreshold) {
  auto b = emptyBoard();
  EXPECT_EQ(dueSeq(*b, 0, 1'000'000'000, 10), 0u);  // nothing launched
  noteLaunch(b.get(), op(1, 1, CollId::kAllReduce, 100));
  noteLaunch(b.get(), op(2, 1, CollId::kAllReduce, 500));
  EXPECT_EQ(dueSeq(*b, 0, 150, 100), 0u);  // 50 ns old, threshold 100
  EXPECT_EQ(dueSeq(*b, 0, 200, 100), 1u);
  EXPECT_EQ(dueSeq(*b, 1, 10'000, 100), 0u);  // reported already
  b->dev.started = 1;
  b->dev.ctaDone[0] = 1;
  EXPECT_EQ(dueSeq(*b, 1, 550, 100), 0u);  // op 2 is 50 ns old
  EXPECT_EQ(dueSeq(*b, 1, 600, 100), 2u);
  b->dev.started = 2;
  b->dev.ctaDone[0] = 2;
  EXPECT_EQ(dueSeq(*b, 1, 10'000, 100), 0u);  // all done
}

TEST(HangReport, NamesTheOperationAndWhereEveryRankIs) {
  EXPECT_EQ(rankList({}), "");
  EXPECT_EQ(rankList({3}), "3");
  EXPECT_EQ(rankList({0, 1}), "0, 1");
  EXPECT_EQ(rankList({0, 1, 2, 3, 5, 7, 8, 9}), "0-3, 5, 7-9");

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

  std::vector<RankProgress> ranks(6);
  ranks[0].where = Where::kRunning;
  ranks[1].where = Where::kRunning;
  ranks[2].where = Where::kNotLaunched;
  ranks[2].launched = 41;
  ranks[2].lastLaunchNs = 2'000'000'000;
  ranks[3].where = Where::kQueued;
  ranks[4].where = Where::kDone;
  ranks[5].where = Where::kUnknown;
  const std::string text = hangReport(r, 61.25, 0, ranks, 5'000'000'000);
  EXPECT_EQ(text,
            "rank 0: AllReduce #42 (1048576 x float32, sum, 8 CTAs) has not completed 61.2 s after its launch. Not "
            "launched by: rank 2 (its last: #41, launched 3.0 s ago). Launched, waiting behind earlier GPU work: ranks "
            "3. Running: ranks 0, 1. Done: ranks 4. Not known (another host, or gone): ranks 5. Look at the ranks that "
            "have not launched it: their code has not called it (a skipped or reordered collective), or is stuck "
            "before it.");
  // Everyone launched it: no advice about the ranks that did not.
  for (RankProgress& p : ranks) p.where = Where::kRunning;
  EXPECT_EQ(hangReport(r, 1, 3, ranks, 0).find("Look at"), std::string::npos);
}

// Ranks 1 and 2 have boards in shared memory (this process plays them), rank 3 is on another
// host, rank 4 made none.
TEST(HangWatch, OtherRanksBoardsAreReadFromSharedMemory) {
  const uint64_t hash = 0xabcd000000000000ull | static_cast<uint64_t>(::getpid()) << 8 | (std::rand() & 0xff);
  const int pid = static_cast<int>(::getpid());
  std::vector<ShmSegment> segments(3);
  for (int r = 1; r <= 2; r++) {
    ASSERT_EQ(ShmSegment::create(progressBoardName(hash, r, pid), progressBoardBytes(5), "test", &segments[r]),
              ncclSuccess);
    auto* b = static_cast<ProgressBoard*>(segments[r].ptr());
    b->magic = kProgressBoardMagic;
    b->nRanks = 5;
    for (uint64_t s = 1; s <= (r == 1 ? 5u : 4u); s++) noteLaunch(b, op(s, 1));
    b->dev.started = r == 1 ? 5 : 3;
    b->dev.ctaDone[0] = b->dev.started;
  }
  std::vector<PeerInfo> peers(5);
  for (int r = 0; r < 5; r++) {
    peers[r].rank = r;
    peers[r].pid = pid;
    peers[r].pidSpace = r == 3 ? 77 : 42;
  }
  auto own = emptyBoard(5);
  for (uint64_t s = 1; s <= 5; s++) noteLaunch(own.get(), op(s, 1));
  own->dev.started = 5;  // running 5

  const std::vector<RankProgress> ranks = gatherProgress(hash, 0, peers, *own, 5);
  ASSERT_EQ(ranks.size(), 5u);
  EXPECT_EQ(ranks[0].where, Where::kRunning);
  EXPECT_EQ(ranks[1].where, Where::kDone);
  EXPECT_EQ(ranks[2].where, Where::kNotLaunched);
  EXPECT_EQ(ranks[2].launched, 4u);
  EXPECT_EQ(ranks[3].where, Where::kUnknown);  // another pid space
  EXPECT_EQ(ranks[4].where, Where::kUnknown);  // no board
  ShmSegment missing;
  EXPECT_NE(ShmSegment::openReadOnly(progressBoardName(hash, 4, pid), progressBoardBytes(5), &missing), ncclSuccess);
  EXPECT_NE(ShmSegment::openReadOnly(progressBoardName(hash, 1, pid), progressBoardBytes(5) * 2, &missing),
            ncclSuccess);
  // A board of a communicator of another size (a stale segment) is not read.
  EXPECT_EQ(gatherProgress(hash, 0, std::vector<PeerInfo>(peers.begin(), peers.begin() + 3), *own, 5)[1].where,
            Where::kUnknown);
}

}  // namespace
}  // namespace braid
