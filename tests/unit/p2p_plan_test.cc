// The point-to-point split and estimate (plan/p2p_plan.h): channel counts every rank computes alike,
// parts that tile an operation exactly, the chunks of balanced operations, and an estimate that
// grows with the work.
#include "plan/p2p_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "device/dev_types.h"

namespace braid::plan {
namespace {

TEST(P2pPlan, ChannelsPerPeerFitEveryPeerOnTheGpu) {
  // 4 H200 (132 multiprocessors; launches of 128 CTAs, kP2pSelfCopyCtas of them kept for an
  // all-to-all's self copy): 6 (peer, direction) queues.
  const int peerCtas = 128 - kP2pSelfCopyCtas;
  EXPECT_EQ(16, p2pChannelsPerPeer(16, 32, 4, peerCtas));
  EXPECT_EQ(20, p2pChannelsPerPeer(32, 32, 4, peerCtas));  // 6 queues x 20 + 8 self-copy CTAs = 128
  EXPECT_EQ(8, p2pChannelsPerPeer(16, 32, 8, peerCtas));   // 14 queues x 8 = 112 CTAs
  EXPECT_EQ(32, p2pChannelsPerPeer(64, 32, 2, 128));
  EXPECT_EQ(1, p2pChannelsPerPeer(0, 32, 2, 128));
  EXPECT_EQ(1, p2pChannelsPerPeer(16, 32, 100, 128));  // more queues than CTAs: one each
  EXPECT_EQ(16, p2pChannelsPerPeer(16, 32, 1, 0));
  // Up to 55 ranks every queue of a full group gets a resident CTA (beyond, the launch refuses it).
  for (int nranks = 2; nranks <= 108 / 2 + 1; nranks++) {
    int channels = p2pChannelsPerPeer(32, 32, nranks, 108);
    EXPECT_LE(2 * (nranks - 1) * channels, 108) << nranks << " ranks";
  }
}

TEST(P2pPlan, ChannelsGrowWithBytes) {
  EXPECT_EQ(1, p2pChannelsFor(1, 16));
  EXPECT_EQ(1, p2pChannelsFor(kP2pBytesPerChannel, 16));
  EXPECT_EQ(2, p2pChannelsFor(kP2pBytesPerChannel + 1, 16));
  EXPECT_EQ(16, p2pChannelsFor(1ull << 30, 16));
  EXPECT_EQ(1, p2pChannelsFor(1ull << 30, 0));
}

TEST(P2pPlan, PartsTileTheOperationOn16ByteBoundaries) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; trial++) {
    uint64_t bytes = 1 + rng() % (8ull << 20);
    int n = p2pChannelsFor(bytes, 1 + static_cast<int>(rng() % 32));
    uint64_t next = 0;
    for (int c = 0; c < n; c++) {
      P2pPart part = p2pPart(bytes, c, n);
      ASSERT_EQ(next, part.offset) << bytes << " bytes, channel " << c << " of " << n;
      ASSERT_EQ(0u, part.offset % 16);
      next = part.offset + part.bytes;
    }
    ASSERT_EQ(bytes, next);
  }
}

TEST(P2pPlan, BalancedChunks) {
  constexpr uint64_t kSlot = 512 << 10;
  constexpr int64_t kMin = 8 << 20;
  constexpr int64_t kChunk = 128 << 10;
  // Below the threshold, with balancing off, or on one channel: fixed parts.
  EXPECT_EQ(0u, p2pBalancedChunk((8 << 20) - 1, 32, kSlot, kMin, kChunk));
  EXPECT_EQ(0u, p2pBalancedChunk(1ull << 30, 32, kSlot, 0, kChunk));
  EXPECT_EQ(0u, p2pBalancedChunk(1ull << 30, 1, kSlot, kMin, kChunk));
  // The chunk asked for, in whole pages, at most the slot and what 16 bits of pages hold.
  EXPECT_EQ(uint64_t{kChunk}, p2pBalancedChunk(8 << 20, 32, kSlot, kMin, kChunk));
  EXPECT_EQ(uint64_t{kChunk}, p2pBalancedChunk(1ull << 30, 2, kSlot, kMin, kChunk + 4095));
  EXPECT_EQ(kSlot, p2pBalancedChunk(1ull << 30, 32, kSlot, kMin, 4 << 20));
  EXPECT_EQ(uint64_t{UINT16_MAX} * kP2pBalancedPage, p2pBalancedChunk(1ull << 40, 2, 1ull << 30, kMin, 1ull << 30));
  // A chunk under a page cannot travel: the operation stays in fixed parts.
  EXPECT_EQ(0u, p2pBalancedChunk(1ull << 30, 32, kSlot, kMin, 100));
}

TEST(P2pPlan, EstimateGrowsWithBytesAndPeers) {
  EXPECT_EQ(0.0, estimateP2pUs({}, 16));
  auto ringShift = [](uint64_t bytes) {
    return std::vector<P2pOpModel>{{1, true, bytes, false, true}, {3, false, bytes, false, true}};
  };
  double small = estimateP2pUs(ringShift(8), 16);
  EXPECT_GT(small, 3.0);
  EXPECT_LT(small, 10.0);
  double big = estimateP2pUs(ringShift(1ull << 30), 16);
  EXPECT_GT(big, 1000.0 * (1ull << 30) / 400e9 * 1e3);  // slower than NVLink's raw rate
  EXPECT_LT(big, 1000.0 * (1ull << 30) / 250e9 * 1e3);
  // All-to-all of 3 peers: each GPU's port carries three times the bytes of one pair.
  std::vector<P2pOpModel> a2a;
  for (int peer = 1; peer <= 3; peer++) {
    a2a.push_back({peer, true, 256ull << 20, false, true});
    a2a.push_back({peer, false, 256ull << 20, false, true});
  }
  EXPECT_GT(estimateP2pUs(a2a, 16), estimateP2pUs(ringShift(256ull << 20), 16) * 2);
  // Without NVLink the same bytes take far longer; a self copy costs little.
  std::vector<P2pOpModel> pcie = ringShift(64ull << 20);
  for (P2pOpModel& op : pcie) op.nvlink = false;
  EXPECT_GT(estimateP2pUs(pcie, 16), 10 * estimateP2pUs(ringShift(64ull << 20), 16));
  std::vector<P2pOpModel> self = {{0, true, 64ull << 20, true, false}, {0, false, 64ull << 20, true, false}};
  EXPECT_LT(estimateP2pUs(self, 16), estimateP2pUs(ringShift(64ull << 20), 16));
}

TEST(P2pPlan, ABalancedPairIsEstimatedAtItsFasterRate) {
  std::vector<P2pOpModel> shift = {{1, true, 1ull << 30, false, true}, {3, false, 1ull << 30, false, true}};
  const double fixed = estimateP2pUs(shift, 20);
  for (P2pOpModel& op : shift) op.balanced = true;
  const double balanced = estimateP2pUs(shift, 20);
  EXPECT_LT(balanced, fixed * 0.95);
  EXPECT_GT(balanced, 1000.0 * (1ull << 30) / 400e9 * 1e3);  // still under NVLink's raw rate
  // A GPU's port still bounds an all-to-all, balanced or not.
  std::vector<P2pOpModel> a2a;
  for (int peer = 1; peer <= 3; peer++) {
    a2a.push_back({peer, true, 256ull << 20, false, true, true});
    a2a.push_back({peer, false, 256ull << 20, false, true, true});
  }
  EXPECT_GT(estimateP2pUs(a2a, 20), 1000.0 * 3 * (256ull << 20) / 300e9 * 1e3);
}

TEST(P2pPlan, AGroupInRoundsPaysALaunchPerRound) {
  std::vector<P2pOpModel> many;
  for (int k = 0; k < 1000; k++) many.push_back({1, true, 64, false, true});
  std::vector<P2pOpModel> fewer(many.begin(), many.begin() + 800);  // 800 segments: one kernel
  const double one = estimateP2pUs(fewer, 16);
  const double rounds = estimateP2pUs(many, 16);  // 1000 segments: 250 rounds of 4
  EXPECT_LT(one, 2 * estimateP2pUs({many[0]}, 16));
  EXPECT_GT(rounds, 250 * estimateP2pUs({many[0]}, 16) * 0.9);
}

}  // namespace
}  // namespace braid::plan
