// The cluster shape a kernel launch asks for (device/launch_kernel.h).
#include <gtest/gtest.h>

#include "device/launch_kernel.h"

namespace braid {
namespace {

TEST(LaunchOptions, ClusterIsTheLargestSizeUpToTheWantedOneThatDividesTheGrid) {
  EXPECT_EQ(4, clusterSizeFor(32, 4));
  EXPECT_EQ(4, clusterSizeFor(24, 4));
  EXPECT_EQ(3, clusterSizeFor(6, 4));  // 4 does not divide 6
  EXPECT_EQ(2, clusterSizeFor(122, 2));
  EXPECT_EQ(1, clusterSizeFor(7, 4));  // prime grid: no cluster
  EXPECT_EQ(1, clusterSizeFor(1, 8));
  EXPECT_EQ(1, clusterSizeFor(32, 0));  // cgaClusterSize 0 or 1: clusters off
  EXPECT_EQ(1, clusterSizeFor(32, 1));
  EXPECT_EQ(8, clusterSizeFor(64, 8));
}

}  // namespace
}  // namespace braid
