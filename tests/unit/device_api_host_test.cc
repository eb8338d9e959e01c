// The parts of nccl_device.h that run on the host as well as the device, checked on the CPU against
// brute force: division by precomputed reciprocals (whose encoding the host shares with kernels
// built against NVIDIA's header, through ncclDevComm's *_rcp32 fields), rolling counters, 4 GiB
// strides, team arithmetic, symmetric-pointer arithmetic and resource-buffer offsets.
#include <gtest/gtest.h>
#include <nccl.h>
#include <nccl_device.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace {

using nccl::utility::idivFast32;
using nccl::utility::idivFast64;
using nccl::utility::idivRcp32;
using nccl::utility::idivRcp64;
using nccl::utility::imodFast32;
using nccl::utility::imodFast64;

TEST(DeviceApiUtility, ReciprocalEncodingIsNccls) {
  // (2^32 - 1) / y, plus one for powers of two; a divisor of 1 wraps to 0.
  EXPECT_EQ(0u, idivRcp32(1));
  EXPECT_EQ(0x80000000u, idivRcp32(2));
  EXPECT_EQ(0x55555555u, idivRcp32(3));
  EXPECT_EQ(0x40000000u, idivRcp32(4));
  EXPECT_EQ(0x33333333u, idivRcp32(5));
  EXPECT_EQ(0x2AAAAAAAu, idivRcp32(6));
  EXPECT_EQ(0x20000000u, idivRcp32(8));
  EXPECT_EQ(0ull, idivRcp64(1));
  EXPECT_EQ(0x5555555555555555ull, idivRcp64(3));
}

TEST(DeviceApiUtility, FastDivisionMatchesDivision32) {
  std::mt19937 rng(1234);
  std::vector<uint32_t> xs = {0u, 1u, 2u, 3u, 7u, 255u, 1u << 16, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
  for (int i = 0; i < 200; i++) xs.push_back(rng());
  for (uint32_t y = 1; y <= 1100; y++) {
    uint32_t rcp = idivRcp32(y);
    std::vector<uint32_t> cases = xs;
    for (uint32_t k : {1u, 2u, 1000u, 4000000u}) {
      cases.push_back(k * y);
      cases.push_back(k * y - 1);
    }
    for (uint32_t x : cases) {
      ASSERT_EQ(x / y, idivFast32(x, y, rcp)) << x << " / " << y;
      ASSERT_EQ(x % y, imodFast32(x, y, rcp)) << x << " % " << y;
    }
  }
  for (uint32_t y : {65535u, 65536u, 1000003u, 0x7fffffffu, 0x80000000u, 0xffffffffu}) {
    for (uint32_t x : xs) ASSERT_EQ(x / y, idivFast32(x, y, idivRcp32(y))) << x << " / " << y;
  }
}

TEST(DeviceApiUtility, FastDivisionMatchesDivision64) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 2000; i++) {
    uint64_t y = (i < 1000) ? uint64_t(i + 1) : (rng() >> (rng() % 63));
    if (y == 0) y = 1;
    uint64_t rcp = idivRcp64(y);
    for (uint64_t x : {uint64_t(0), uint64_t(1), y - 1, y, y + 1, rng(), ~uint64_t(0), rng() >> 7}) {
      uint64_t q = x / y;
      if (q <= 0xffffffffull) {
        ASSERT_EQ(uint32_t(q), idivFast64(x, y, rcp)) << x << " / " << y;
      }
      ASSERT_EQ(x % y, imodFast64(x, y, rcp)) << x << " % " << y;
    }
  }
}

TEST(DeviceApiUtility, ReciprocalOfAProduct) {
  for (uint32_t x = 1; x <= 200; x++) {
    for (uint32_t y = 1; y <= 200; y++) {
      uint32_t rcp = nccl::utility::imulRcp32(x, idivRcp32(x), y, idivRcp32(y));
      // Whatever the encoding of the product's reciprocal, it divides exactly.
      for (uint32_t v : {0u, 1u, x * y - 1, x * y, 12345678u, 0xffffffffu}) {
        ASSERT_EQ(v / (x * y), idivFast32(v, x * y, rcp)) << v << " / (" << x << " * " << y << ")";
      }
    }
  }
}

TEST(DeviceApiUtility, RollingComparisonsWrap) {
  using nccl::utility::rollingLessEq;
  using nccl::utility::rollingLessThan;
  EXPECT_TRUE(rollingLessEq<uint32_t>(5, 5));
  EXPECT_TRUE(rollingLessEq<uint32_t>(5, 6));
  EXPECT_FALSE(rollingLessEq<uint32_t>(6, 5));
  EXPECT_TRUE(rollingLessEq<uint32_t>(0xfffffff0u, 3u));  // 3 is after the wrap
  EXPECT_FALSE(rollingLessEq<uint32_t>(3u, 0xfffffff0u));
  EXPECT_TRUE(rollingLessThan<uint32_t>(0xffffffffu, 0u));
  EXPECT_FALSE(rollingLessThan<uint32_t>(7, 7));
  EXPECT_TRUE(rollingLessEq<uint64_t>(250, 3, 8));  // on an 8-bit counter
  EXPECT_FALSE(rollingLessEq<uint64_t>(3, 250, 8));
}

TEST(DeviceApiUtility, Add4GMovesTheHighWord) {
  char* base = reinterpret_cast<char*>(uintptr_t(0x00007f0012345678ull));
  EXPECT_EQ(uintptr_t(0x00007f0312345678ull), reinterpret_cast<uintptr_t>(nccl::utility::add4G(base, 3)));
  EXPECT_EQ(uintptr_t(0x00007eff12345678ull), reinterpret_cast<uintptr_t>(nccl::utility::add4G(base, -1)));
  EXPECT_EQ(0x500000001ull, nccl::utility::add4G<uint64_t>(1, 5));
}

// A team as the world ranks it holds.
std::vector<int> members(ncclTeam_t t, int callerWorld) {
  std::vector<int> out;
  for (int r = 0; r < t.nRanks; r++) out.push_back(callerWorld + (r - t.rank) * t.stride);
  return out;
}

TEST(DeviceApiTeams, MembershipAndTranslationMatchBruteForce) {
  const int world = 24;
  std::vector<ncclTeam_t> teams;
  for (int me = 0; me < world; me++) {
    teams.clear();
    teams.push_back(ncclTeam_t{world, me, 1});          // world
    teams.push_back(ncclTeam_t{4, me % 4, 1});          // LSA of 4
    teams.push_back(ncclTeam_t{world / 4, me / 4, 4});  // rail across LSA teams of 4
    teams.push_back(ncclTeam_t{3, me % 8 / 2 % 3, 2});  // a strided team, when it fits
    teams.push_back(ncclTeam_t{2, me % 12 / 6, 6});
    for (ncclTeam_t a : teams) {
      std::vector<int> aw = members(a, me);
      if (aw.front() < 0 || aw.back() >= world) continue;
      for (ncclTeam_t b : teams) {
        std::vector<int> bw = members(b, me);
        if (bw.front() < 0 || bw.back() >= world) continue;
        for (int bPeer = 0; bPeer < b.nRanks; bPeer++) {
          int w = bw[bPeer];
          int index = -1;
          for (int i = 0; i < a.nRanks; i++) {
            if (aw[i] == w) index = i;
          }
          ASSERT_EQ(index >= 0, ncclTeamRankIsMember(a, b, bPeer)) << "caller " << me << " world rank " << w;
          if (index >= 0) {
            ASSERT_EQ(index, ncclTeamRankToTeam(a, b, bPeer));
          }
        }
      }
    }
  }
}

TEST(DeviceApiTeams, FactorsSplitATeam) {
  ncclTeam_t parent{12, 7, 2};
  ncclTeam_t inner = ncclTeamInnerFactor(parent, 4);
  ncclTeam_t outer = ncclTeamOuterFactor(parent, 4);
  EXPECT_EQ(4, inner.nRanks);
  EXPECT_EQ(3, inner.rank);
  EXPECT_EQ(2, inner.stride);
  EXPECT_EQ(3, outer.nRanks);
  EXPECT_EQ(1, outer.rank);
  EXPECT_EQ(8, outer.stride);
}

TEST(DeviceApiTeams, RankInDifferenceEnumeratesTheRest) {
  // Parent: 24 ranks; subsets: strided sub-teams through the caller, either direction.
  for (int me = 0; me < 24; me++) {
    ncclTeam_t parent{24, me, 1};
    for (int step : {1, 2, 3, 4, 6, -2, -3}) {
      for (int n = 1; n <= 24; n++) {
        for (int myIndex = 0; myIndex < n; myIndex++) {
          ncclTeam_t subset{n, myIndex, step};
          std::vector<int> sw = members(subset, me);
          bool fits = true;
          for (int w : sw) fits &= (0 <= w && w < 24);
          if (!fits) continue;
          std::set<int> in(sw.begin(), sw.end());
          std::vector<int> rest;
          for (int r = 0; r < 24; r++) {
            if (!in.count(r)) rest.push_back(r);
          }
          for (int i = 0; i < int(rest.size()); i++) {
            ASSERT_EQ(rest[i], ncclTeamRankInDifference(parent, subset, i))
                << "caller " << me << " subset {" << n << ", " << myIndex << ", " << step << "} index " << i;
          }
        }
      }
    }
  }
}

TEST(DeviceApiSymPtr, ArithmeticIsInElements) {
  ncclWindow_t win = reinterpret_cast<ncclWindow_t>(uintptr_t(0x1000));
  ncclSymPtr<double> p(win, 64);
  ncclSymPtr<double> q = p + 3;
  EXPECT_EQ(win, q.window);
  EXPECT_EQ(size_t(64 + 24), q.offset);
  EXPECT_EQ(3, q - p);
  q -= 2u;
  EXPECT_EQ(size_t(72), q.offset);
  q += -1;
  EXPECT_TRUE(q == p);
  EXPECT_TRUE(q != p + 1ull);
  ncclSymPtr<char> bytes = p + 1;
  EXPECT_EQ(size_t(72), bytes.offset);
  EXPECT_EQ(8, bytes - ncclSymPtr<char>(p));
  ncclSymPtr<int> none;
  EXPECT_EQ(nullptr, none.window);
  EXPECT_EQ(size_t(0), none.offset);
}

TEST(DeviceApiResources, HandlesAreUnitsOf128Bytes) {
  EXPECT_EQ(size_t(0), ncclGetResourceBufferOffset(0));
  EXPECT_EQ(size_t(640), ncclGetResourceBufferOffset(5));
  EXPECT_EQ(size_t(0xffffffffull) * 128, ncclGetResourceBufferOffset(0xffffffffu));
}

}  // namespace
