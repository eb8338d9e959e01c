// What the topology tests share: link matrices, the invariants every topology keeps, ranks of one
// host, and a fixture whose environment changes are undone after each test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "topo/topo.h"
#include "util/params.h"
#include "util_test_env.h"

namespace braid::topo::test_helpers {

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// n ranks, every pair the same link; the diagonal is LOC.
inline std::vector<Link> uniformLinks(int n, PathType path, int nvlinks, bool p2pOk, bool switched = false) {
  std::vector<Link> links(n * n, Link{path, nvlinks, p2pOk, switched});
  for (int i = 0; i < n; ++i) links[i * n + i] = Link{PathType::kLoc, 0, true};
  return links;
}

inline void setPair(std::vector<Link>* links, int n, int i, int j, Link link) {
  (*links)[i * n + j] = link;
  (*links)[j * n + i] = link;
}

inline TopoParams defaultParams() { return TopoParams{false, PathType::kPxb, false, 1, kMaxChannels}; }

inline bool isPermutation(std::vector<int> ring, int n) {
  if (static_cast<int>(ring.size()) != n) return false;
  std::sort(ring.begin(), ring.end());
  for (int i = 0; i < n; ++i) {
    if (ring[i] != i) return false;
  }
  return true;
}

// Checks the invariants every topology keeps.
inline void expectWellFormed(const Topology& topo, const TopoParams& params) {
  int n = topo.nranks;
  ASSERT_EQ(topo.transport.size(), static_cast<size_t>(n * n));
  ASSERT_EQ(static_cast<int>(topo.rings.size()), topo.nChannels);
  EXPECT_GE(topo.nChannels, n == 1 ? 1 : params.minChannels);
  EXPECT_LE(topo.nChannels, n == 1 ? 1 : params.maxChannels);
  for (const auto& ring : topo.rings) EXPECT_TRUE(isPermutation(ring, n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(topo.transport[i * n + i], TransportKind::kNone);
    for (int j = 0; j < n; ++j) EXPECT_EQ(topo.transport[i * n + j], topo.transport[j * n + i]);
  }
  EXPECT_GT(topo.bwPerChannelGBps, 0);
}

inline std::vector<RankPlace> sameHostRanks(int n) {
  std::vector<RankPlace> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(RankPlace{r, r, (static_cast<int64_t>(0x07 + r * 0x10) << 12), 0x1234, 0x99 + uint64_t(r)});
  }
  return ranks;
}

class TopoTest : public testing::UtilEnvTest {
 protected:
  void setEnv(const char* name, const std::string& value) {
    setVar(name, value);
    paramsReset();
  }
};

}  // namespace braid::topo::test_helpers
