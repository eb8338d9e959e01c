// The host arithmetic of symmetric windows: where each LSA rank's allocation goes in the flat range,
// the checks every rank makes on the gathered offers, and the words of the signal memory.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "window/flat_layout.h"
#include "window/offer.h"
#include "window/pad_layout.h"
#include "window/window_types.h"

namespace braid::window {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kGran = 2 * kMiB;

TEST(FlatLayout, OneRankAtTheStartOfItsAllocation) {
  FlatLayout l;
  std::string why;
  ASSERT_TRUE(planFlatLayout({RankExtent{8 * kMiB, 0, 5 * kMiB}}, kGran, &l, &why)) << why;
  EXPECT_EQ(l.stride, 4 * kGiB);
  EXPECT_EQ(l.userOffset, 0u);
  EXPECT_EQ(l.mapOffsets, std::vector<uint64_t>{0});
  EXPECT_EQ(l.rangeBytes(), 4 * kGiB);
}

TEST(FlatLayout, WindowsAtDifferentOffsetsLineUpInEverySlot) {
  // Rank 1's window starts one page (and 12 KiB) further into a larger allocation.
  std::vector<RankExtent> ranks = {{8 * kMiB, 12 * 1024, kMiB}, {16 * kMiB, kGran + 12 * 1024, 3 * kMiB}};
  FlatLayout l;
  std::string why;
  ASSERT_TRUE(planFlatLayout(ranks, kGran, &l, &why)) << why;
  EXPECT_EQ(l.userOffset, kGran + 12 * 1024);
  ASSERT_EQ(l.mapOffsets.size(), 2u);
  for (size_t r = 0; r < ranks.size(); ++r) {
    EXPECT_EQ(l.mapOffsets[r] % kGran, 0u) << "mappings start on a page";
    EXPECT_EQ(l.mapOffsets[r] + ranks[r].memOffset, l.userOffset) << "every window at the same slot offset";
    EXPECT_LE(l.mapOffsets[r] + ranks[r].allocBytes, l.stride) << "every mapping inside its slot";
  }
  EXPECT_EQ(l.stride % (4 * kGiB), 0u);
}

TEST(FlatLayout, StrideGrowsPast4GiBInWholeUnits) {
  FlatLayout l;
  std::string why;
  ASSERT_TRUE(planFlatLayout({{5 * kGiB, 0, 5 * kGiB}, {kGran, 0, 1}}, kGran, &l, &why)) << why;
  EXPECT_EQ(l.stride, 8 * kGiB);
  EXPECT_EQ(l.rangeBytes(), 16 * kGiB);
}

TEST(FlatLayout, OffsetsThatCannotShareAPageBoundaryAreRefused) {
  FlatLayout l;
  std::string why;
  EXPECT_FALSE(planFlatLayout({{8 * kMiB, 0, kMiB}, {8 * kMiB, 4096, kMiB}}, kGran, &l, &why));
  EXPECT_NE(why.find("LSA rank 1"), std::string::npos) << why;
}

TEST(FlatLayout, WindowsThatDoNotFitTheirAllocationAreRefused) {
  FlatLayout l;
  std::string why;
  EXPECT_FALSE(planFlatLayout({{kGran, 0, kGran + 1}}, kGran, &l, &why));
  EXPECT_FALSE(planFlatLayout({{kGran + 4096, 0, 1}}, kGran, &l, &why)) << "allocation not a whole page count";
  EXPECT_FALSE(planFlatLayout({}, kGran, &l, &why));
  EXPECT_FALSE(planFlatLayout({{kGran, 0, 1}}, 3 * kMiB, &l, &why)) << "granularity not a power of two";
}

WindowOffer offer(int status, int flags, uint64_t memOffset = 0, uint64_t serial = 1) {
  WindowOffer o;
  std::memset(&o, 0, sizeof(o));
  o.magic = kOfferMagic;
  o.serial = serial;
  o.status = status;
  o.winFlags = flags;
  o.userBytes = kMiB;
  o.allocBytes = 4 * kMiB;
  o.memOffset = memOffset;
  o.granularity = kGran;
  return o;
}

TEST(JudgeOffers, AgreeingOffersGiveEveryLsaTeamALayout) {
  std::vector<WindowOffer> offers(4, offer(ncclSuccess, NCCL_WIN_COLL_SYMMETRIC));
  offers[3].granularity = 4 * kMiB;
  OfferVerdict v = judgeOffers(offers, 2, 2);
  ASSERT_EQ(v.result, ncclSuccess) << v.why;
  EXPECT_EQ(v.granularity, 4 * kMiB) << "the largest granularity of the team";
  EXPECT_EQ(v.layout.mapOffsets.size(), 2u);
}

TEST(JudgeOffers, ARefusalFailsEveryRankWithItsCode) {
  std::vector<WindowOffer> offers(3, offer(ncclSuccess, 0));
  offers[1].status = ncclInvalidArgument;
  OfferVerdict v = judgeOffers(offers, 0, 3);
  EXPECT_EQ(v.result, ncclInvalidArgument);
  EXPECT_NE(v.why.find("rank 1"), std::string::npos) << v.why;
}

TEST(JudgeOffers, DisagreeingFlagsAreInvalidUsage) {
  std::vector<WindowOffer> offers = {offer(ncclSuccess, NCCL_WIN_COLL_SYMMETRIC), offer(ncclSuccess, 0)};
  OfferVerdict v = judgeOffers(offers, 0, 2);
  EXPECT_EQ(v.result, ncclInvalidUsage);
  EXPECT_NE(v.why.find("0x1"), std::string::npos) << v.why;
}

TEST(JudgeOffers, RanksAtDifferentRegistrationsOrGarbageAreInternalErrors) {
  std::vector<WindowOffer> offers = {offer(ncclSuccess, 0, 0, 1), offer(ncclSuccess, 0, 0, 2)};
  EXPECT_EQ(judgeOffers(offers, 0, 2).result, ncclInternalError);
  offers[1] = offer(ncclSuccess, 0);
  offers[1].magic = 0;
  EXPECT_EQ(judgeOffers(offers, 0, 2).result, ncclInternalError);
}

TEST(JudgeOffers, MisalignedPeersAreInvalidUsage) {
  std::vector<WindowOffer> offers = {offer(ncclSuccess, 0, 0), offer(ncclSuccess, 0, 8192)};
  EXPECT_EQ(judgeOffers(offers, 0, 2).result, ncclInvalidUsage);
  // Another LSA team's offsets do not matter to this one.
  EXPECT_EQ(judgeOffers(offers, 0, 1).result, ncclSuccess);
}

TEST(PadLayout, EveryWordHasItsOwnPlace) {
  PadLayout l;
  l.nCtx = 3;
  l.nSig = 2;
  l.nranks = 5;
  std::set<uint64_t> seen;
  for (int c = 0; c < l.nCtx; ++c) {
    for (int s = 0; s < l.nSig; ++s) {
      for (int r = 0; r < l.nranks; ++r) {
        for (uint64_t off : {l.count(c, s, r), l.graphCount(c, s, r), l.stage(c, s, r)}) {
          EXPECT_EQ(off % 8, 0u);
          EXPECT_LT(off, l.bytes());
          EXPECT_TRUE(seen.insert(off).second) << "word " << off << " used twice";
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), 3 * l.words());
  EXPECT_EQ(l.bytes(), 3 * l.words() * 8);
  // The words waits block on (counts, then graph counts) come first, in one run: teardown releases
  // them with one copy.
  EXPECT_EQ(l.count(0, 0, 0), 0u);
  EXPECT_EQ(l.graphCount(l.nCtx - 1, l.nSig - 1, l.nranks - 1) + 8, l.stage(0, 0, 0));
}

TEST(WindowVidmem, FlagsAndStrideUnitsMatchNccl) {
  EXPECT_EQ(kWinKnownFlags,
            NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING | NCCL_WIN_GIN_ONLY | NCCL_WIN_CFT_COUNTED);
  EXPECT_EQ(kWinAlignment, static_cast<uint64_t>(NCCL_WIN_REQUIRED_ALIGNMENT));
  EXPECT_EQ(kStrideUnit, uint64_t{4} * kGiB);
  EXPECT_EQ(sizeof(WindowVidmem), 96u);
}

}  // namespace
}  // namespace braid::window
