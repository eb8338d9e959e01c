// The cluster shape a kernel launch asks for (device/launch_kernel.h), and what an operation's
// launch-completion event changes in its launch (launch/data_path_context.h).
#include <gtest/gtest.h>

#include "device/launch_kernel.h"
#include "launch/data_path_context.h"

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

// With the driver's launch-completion events, an eager launch that carries one goes without
// programmatic dependent launch (with it the event would wait for the kernel's end); its clusters
// stay. A captured one keeps it (without it the event was invalid after replays). A launch without
// an event keeps every option. No CUDA call is made on these paths.
TEST(LaunchOptions, ALaunchCompletionEventTurnsProgrammaticLaunchOff) {
  KernelLaunch k;
  k.launchEventAttr = true;
  LaunchOptions base;
  base.pdl = true;
  base.clusterSize = 4;
  auto* event = reinterpret_cast<cudaEvent_t>(0x1000);  // only passed on, never used here
  LaunchOptions out;
  ASSERT_EQ(ncclSuccess, k.withLaunchEvent(base, event, nullptr, /*captured=*/false, &out));
  EXPECT_EQ(out.completionEvent, event);
  EXPECT_FALSE(out.pdl);
  EXPECT_EQ(out.clusterSize, 4);
  ASSERT_EQ(ncclSuccess, k.withLaunchEvent(base, event, nullptr, /*captured=*/true, &out));
  EXPECT_EQ(out.completionEvent, event);
  EXPECT_TRUE(out.pdl);
  ASSERT_EQ(ncclSuccess, k.withLaunchEvent(base, nullptr, nullptr, /*captured=*/false, &out));
  EXPECT_EQ(out.completionEvent, nullptr);
  EXPECT_TRUE(out.pdl);
}

}  // namespace
}  // namespace braid
