// Staged sends of in-place AlltoAll (plan/p2p_stage.h): the pairing of ranks into rounds is a
// 1-factorization both sides agree on, batches are runs of consecutive rounds within the budget,
// ranks that batch differently (or not at all) always finish (simulated), and the copies into the
// staging memory cover every staged range.
#include "plan/p2p_stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "plan/p2p_plan.h"

namespace braid::plan {
namespace {

TEST(P2pStage, RoundsPairEveryTwoRanksOnceAndAlike) {
  EXPECT_EQ(0, pairRounds(1));
  EXPECT_EQ(1, pairRounds(2));
  EXPECT_EQ(3, pairRounds(3));
  EXPECT_EQ(7, pairRounds(8));
  for (int n = 2; n <= 33; n++) {
    for (int r = 0; r < n; r++) {
      std::set<int> partners;
      int sitOut = 0;
      for (int s = 0; s < pairRounds(n); s++) {
        const int p = pairPartner(r, s, n);
        ASSERT_GE(p, 0);
        ASSERT_LT(p, n);
        ASSERT_EQ(r, pairPartner(p, s, n)) << n << " ranks, round " << s;
        if (p == r) {
          sitOut++;
          continue;
        }
        ASSERT_TRUE(partners.insert(p).second) << "rank " << r << " meets " << p << " twice, " << n << " ranks";
        ASSERT_EQ(s, pairRound(r, p, n));
        ASSERT_EQ(s, pairRound(p, r, n));
      }
      EXPECT_EQ(static_cast<size_t>(n - 1), partners.size()) << n << " ranks, rank " << r;
      EXPECT_EQ(n % 2, sitOut) << n << " ranks, rank " << r;  // odd counts: one round each without a partner
    }
  }
}

std::vector<uint64_t> blocks(int n, int rank, uint64_t bytes) {
  std::vector<uint64_t> staged(static_cast<size_t>(n), bytes);
  staged[static_cast<size_t>(rank)] = 0;
  return staged;
}

TEST(P2pStage, OneBatchWithinTheBudgetOrWhenAsked) {
  EXPECT_EQ(0, planStageBatches(0, 8, std::vector<uint64_t>(8, 0), 64 << 20, 2, false).batches());
  EXPECT_EQ(0, planStageBatches(0, 1, {100}, 64 << 20, 1, false).batches());  // only its own block
  const StagePlan fits = planStageBatches(3, 8, blocks(8, 3, 8 << 20), 64 << 20, 2, false);
  ASSERT_EQ(1, fits.batches());
  EXPECT_EQ(uint64_t{56} << 20, fits.batchBytes[0]);
  for (int b : fits.batchOfPeer) EXPECT_EQ(0, b);
  EXPECT_EQ(1, planStageBatches(3, 8, blocks(8, 3, 1ull << 30), 64 << 20, 2, true).batches());
}

// Batch b holds the consecutive rounds after batch b - 1's; each stays within half the budget unless
// it stages to no more than minRounds peers; the bytes add up.
void checkBatches(int rank, int n, const std::vector<uint64_t>& staged, uint64_t budget, int minRounds) {
  const StagePlan plan = planStageBatches(rank, n, staged, budget, minRounds, false);
  uint64_t total = 0;
  for (int p = 0; p < n; p++) total += p == rank ? 0 : staged[static_cast<size_t>(p)];
  if (total == 0) {
    EXPECT_EQ(0, plan.batches());
    return;
  }
  ASSERT_GE(plan.batches(), 1);
  std::vector<uint64_t> bytes(static_cast<size_t>(plan.batches()), 0);
  std::vector<int> rounds(static_cast<size_t>(plan.batches()), 0);
  int previous = 0;
  for (int s = 0; s < pairRounds(n); s++) {
    const int p = pairPartner(rank, s, n);
    if (p == rank) continue;
    const int b = plan.batchOfPeer[static_cast<size_t>(p)];
    ASSERT_TRUE(b == previous || b == previous + 1) << "round " << s << " in batch " << b << " after " << previous;
    previous = b;
    bytes[static_cast<size_t>(b)] += staged[static_cast<size_t>(p)];
    if (staged[static_cast<size_t>(p)] > 0) rounds[static_cast<size_t>(b)]++;
  }
  EXPECT_EQ(plan.batches() - 1, previous);
  for (int b = 0; b < plan.batches(); b++) {
    EXPECT_EQ(bytes[static_cast<size_t>(b)], plan.batchBytes[static_cast<size_t>(b)]);
    if (plan.batches() > 1 && rounds[static_cast<size_t>(b)] > std::max(minRounds, 1)) {
      EXPECT_LE(plan.batchBytes[static_cast<size_t>(b)], budget / 2) << "batch " << b;
    }
  }
  if (total <= budget) {
    EXPECT_EQ(1, plan.batches());
  }
}

TEST(P2pStage, BatchesAreRunsOfRoundsWithinHalfTheBudget) {
  // 8 ranks of 128 MiB blocks with a 64 MiB budget: 7 batches of one peer, or 4 of two.
  const StagePlan single = planStageBatches(0, 8, blocks(8, 0, 128 << 20), 64 << 20, 1, false);
  EXPECT_EQ(7, single.batches());
  const StagePlan pairs = planStageBatches(0, 8, blocks(8, 0, 128 << 20), 64 << 20, 2, false);
  EXPECT_EQ(4, pairs.batches());
  // 4 MiB blocks on 32 ranks: 124 MiB staged, 8 blocks per 32 MiB half.
  const StagePlan many = planStageBatches(5, 32, blocks(32, 5, 4 << 20), 64 << 20, 1, false);
  EXPECT_EQ(4, many.batches());
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 3000; trial++) {
    const int n = 2 + static_cast<int>(rng() % 24);
    const int rank = static_cast<int>(rng() % static_cast<uint64_t>(n));
    std::vector<uint64_t> staged(static_cast<size_t>(n));
    for (uint64_t& b : staged) b = rng() % 4 == 0 ? 0 : rng() % (8 << 20);
    checkBatches(rank, n, staged, 1 + rng() % (32 << 20), 1 + static_cast<int>(rng() % 3));
  }
}

// Every rank runs its batches in order, one kernel each, whose CTAs are all resident: the operations
// of a pair complete once both ranks run the kernels that hold them. Ranks with different budgets,
// minimum rounds, or no staging at all (one kernel of every peer) must all finish.
TEST(P2pStage, RanksBatchingDifferentlyAllFinish) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 2000; trial++) {
    const int n = 2 + static_cast<int>(rng() % 17);
    const uint64_t block = 1 + rng() % (16 << 20);
    std::vector<std::vector<int>> batchOf(static_cast<size_t>(n));  // [rank][peer]
    std::vector<int> batches(static_cast<size_t>(n));
    for (int r = 0; r < n; r++) {
      const bool inPlace = rng() % 4 != 0;
      const StagePlan plan = planStageBatches(r, n, blocks(n, r, inPlace ? block : 0), 1 + rng() % (64 << 20),
                                              1 + static_cast<int>(rng() % 3), false);
      batchOf[static_cast<size_t>(r)] =
          plan.batches() > 0 ? plan.batchOfPeer : std::vector<int>(static_cast<size_t>(n), 0);
      batches[static_cast<size_t>(r)] = std::max(plan.batches(), 1);
    }
    std::vector<int> current(static_cast<size_t>(n), 0);
    std::vector<std::vector<bool>> done(static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(n), false));
    for (bool progress = true; progress;) {
      progress = false;
      for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
          if (a == b || done[a][b]) continue;
          if (current[a] < batches[a] && current[b] < batches[b] && batchOf[a][b] == current[a] &&
              batchOf[b][a] == current[b]) {
            done[a][b] = done[b][a] = true;
            progress = true;
          }
        }
      }
      for (int a = 0; a < n; a++) {
        if (current[a] >= batches[a]) continue;
        bool finished = true;
        for (int b = 0; b < n; b++) finished = finished && (a == b || batchOf[a][b] != current[a] || done[a][b]);
        if (finished) {
          current[a]++;
          progress = true;
        }
      }
    }
    for (int a = 0; a < n; a++) ASSERT_EQ(batches[a], current[a]) << "trial " << trial << ": rank " << a << " stuck";
  }
}

// Two AlltoAlls of one group whose buffers lie close together in different allocations: no copy may
// span both (the device copy would cross from one allocation into the other).
TEST(P2pStage, RangesOfDifferentAllocationsNeverShareACopy) {
  std::vector<StageCopy> copies;
  std::vector<uint64_t> offsets;
  const std::vector<StageRange> ranges = {{0x20000000, 4096, 0x20000000}, {0x20001200, 4096, 0x20001200}};
  planStageCopies(ranges, &copies, &offsets);
  ASSERT_EQ(2u, copies.size());
  EXPECT_EQ(0x20000000u, copies[0].src);
  EXPECT_EQ(0x20001200u, copies[1].src);
  EXPECT_EQ(4096u, copies[0].bytes);
  const std::vector<StageRange> unknown = {{0x30000000, 4096, 0}, {0x30001000, 4096, 0}};
  planStageCopies(unknown, &copies, &offsets);
  EXPECT_EQ(2u, copies.size());
}

TEST(P2pStage, CopiesCoverEveryRangeAndShareCopiesWhenClose) {
  std::vector<StageCopy> copies;
  std::vector<uint64_t> offsets;
  // In-place AlltoAll of 8 ranks, rank 3: the blocks around its own. Small blocks: one copy (its own
  // block copied along); large: two.
  for (uint64_t block : {uint64_t{100}, uint64_t{1} << 20}) {
    std::vector<StageRange> ranges;
    for (uint64_t p = 0; p < 8; p++) {
      if (p != 3) ranges.push_back({0x10000000 + p * block, block, 0x10000000});
    }
    const uint64_t used = planStageCopies(ranges, &copies, &offsets);
    ASSERT_EQ(block <= kStageGapBytes ? 1u : 2u, copies.size()) << block;
    EXPECT_EQ(
        block <= kStageGapBytes ? 8 * block : (3 * block + kStageAlign - 1) / kStageAlign * kStageAlign + 4 * block,
        used);
  }
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 2000; trial++) {
    std::vector<StageRange> ranges(1 + rng() % 12);
    for (StageRange& r : ranges) {
      r = {0x1000 + rng() % (1 << 20), rng() % 5 == 0 ? 0 : rng() % (200 << 10), 0x1000 + rng() % 2};
    }
    const uint64_t used = planStageCopies(ranges, &copies, &offsets);
    ASSERT_EQ(ranges.size(), offsets.size());
    for (size_t c = 0; c < copies.size(); c++) {
      EXPECT_EQ(0u, copies[c].dstOffset % kStageAlign);
      EXPECT_LE(copies[c].dstOffset + copies[c].bytes, used);
      if (c > 0) {
        EXPECT_GE(copies[c].dstOffset, copies[c - 1].dstOffset + copies[c - 1].bytes);
      }
    }
    // Each range lies inside one copy, at its offset.
    for (size_t i = 0; i < ranges.size(); i++) {
      if (ranges[i].bytes == 0) continue;
      bool covered = false;
      for (const StageCopy& c : copies) {
        if (ranges[i].addr >= c.src && ranges[i].addr + ranges[i].bytes <= c.src + c.bytes) {
          covered = offsets[i] == c.dstOffset + (ranges[i].addr - c.src);
        }
      }
      EXPECT_TRUE(covered) << "trial " << trial << ", range " << i;
    }
  }
}

// An in-place send goes guarded only where every channel's part fits that channel's FIFO: 4 slots of
// 512 KiB on 32 channels hold 64 MiB, and one byte more makes the first part too large.
TEST(P2pStage, GuardedInPlaceOnlyWherePartsFitTheFifo) {
  const uint64_t fifo = 4 * (512 << 10);
  EXPECT_TRUE(guardFits(64ull << 20, 32, fifo));
  EXPECT_FALSE(guardFits((64ull << 20) + 1, 32, fifo));
  EXPECT_TRUE(guardFits(fifo, 1, fifo));
  EXPECT_FALSE(guardFits(fifo + 16, 1, fifo));
  EXPECT_TRUE(guardFits(0, 1, fifo));
  EXPECT_TRUE(guardFits(5, 3, 16));  // 5 bytes split in 16-byte units: one part, of 5 bytes
  EXPECT_FALSE(guardFits(1000, 0, fifo));
  // The channels an operation takes (p2pChannelsFor): 96 MiB needs more than 32 x 2 MiB.
  EXPECT_FALSE(guardFits(96ull << 20, p2pChannelsFor(96ull << 20, 32), fifo));
  EXPECT_TRUE(guardFits(3ull << 20, p2pChannelsFor(3ull << 20, 32), fifo));
}

TEST(P2pStage, PortPeersFromTheCostModel) {
  EXPECT_EQ(2, p2pPortPeers(9));  // 8 H200: 9 channels per peer
  EXPECT_EQ(1, p2pPortPeers(20));
  EXPECT_EQ(1, p2pPortPeers(32));
  EXPECT_GT(p2pPortPeers(1), 10);
  EXPECT_EQ(0.0, estimateStageCopyUs(0));
  EXPECT_GT(estimateStageCopyUs(64 << 20), estimateStageCopyUs(1 << 20));
}

}  // namespace
}  // namespace braid::plan
