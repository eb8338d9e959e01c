// The cost model's time estimates: monotonic in size, shaped by hops and bandwidth, for rings,
// Direct and the symmetric kernels.
#include "plan_test_util.h"

namespace braid::plan {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

TEST(PlanEstimate, MonotonicAndShaped) {
  for (int n = 2; n <= 8; ++n) {
    CommModel m = hopperModel(n);
    for (CollId coll : kColls) {
      for (int p = 0; p < kNumProtos; ++p) {
        for (int nc : {1, 4, 16}) {
          double last = 0;
          for (size_t bytes : sweepSizes()) {
            double us = estimateUs(m, coll, static_cast<ProtoId>(p), nc, bytes);
            EXPECT_GE(us, last);
            last = us;
          }
        }
      }
    }
  }
  CommModel m = hopperModel(8);
  // Latency only at 0 bytes: base + 2(n-1) hops for AllReduce, n-1 for AllGather, n for Broadcast.
  EXPECT_DOUBLE_EQ(estimateUs(m, CollId::kAllReduce, kProtoSimple, 16, 0),
                   kRingBaseLatencyUs[kProtoSimple] + 14 * kRingStepFloorUs[kProtoSimple]);
  // Network hops are slower than the floor: it changes nothing there.
  CommModel net = netModel(2, 2);
  EXPECT_DOUBLE_EQ(estimateUs(net, CollId::kAllReduce, kProtoSimple, 1, 0),
                   kRingBaseLatencyUs[kProtoSimple] + 6 * net.hopLatencyUs[kProtoSimple]);
  EXPECT_DOUBLE_EQ(estimateUs(m, CollId::kAllGather, kProtoLL, 16, 0),
                   kRingBaseLatencyUs[kProtoLL] + 7 * m.hopLatencyUs[kProtoLL]);
  EXPECT_DOUBLE_EQ(estimateUs(m, CollId::kBroadcast, kProtoLL128, 16, 0),
                   kRingBaseLatencyUs[kProtoLL128] + 8 * m.hopLatencyUs[kProtoLL128] * kChainHopFactor);
  // Simple bandwidth: 16 x 20 GB/s bus x kRingSimpleBwFactor, algBw = bus x 8 / 14, on top of the
  // latency of the steps and of the first and last step's handshake (the floor's part above the
  // hop): whole with one chunk per channel and step (64 MiB: 16 channels x 8 blocks of a slot),
  // the share of one chunk with more (1 GB); below, the floor.
  const double algBw = 320.0 * kRingSimpleBwFactor * 8 / 14;
  const double latencyUs = kRingBaseLatencyUs[kProtoSimple] + 14 * m.hopLatencyUs[kProtoSimple];
  const double twoHandshakesUs = 2 * (kRingStepFloorUs[kProtoSimple] - m.hopLatencyUs[kProtoSimple]);
  EXPECT_DOUBLE_EQ(estimateUs(m, CollId::kAllReduce, kProtoSimple, 16, 8 << 10),
                   estimateUs(m, CollId::kAllReduce, kProtoSimple, 16, 0));
  const double oneChunk = 16.0 * 8 * m.slotPayloadBytes[kProtoSimple];
  EXPECT_NEAR(estimateUs(m, CollId::kAllReduce, kProtoSimple, 16, static_cast<size_t>(oneChunk)),
              latencyUs + oneChunk / (1000.0 * algBw) + twoHandshakesUs, 1e-6);
  EXPECT_NEAR(estimateUs(m, CollId::kAllReduce, kProtoSimple, 16, 1000000000),
              latencyUs + 1e9 / (1000.0 * algBw) + twoHandshakesUs * oneChunk / 1e9, 1e-6);
  // More channels never make it slower; LL is capped (kLlMaxBusBwGBps) on one node.
  EXPECT_LT(estimateUs(m, CollId::kAllReduce, kProtoSimple, 16, 1 << 24),
            estimateUs(m, CollId::kAllReduce, kProtoSimple, 4, 1 << 24));
  EXPECT_DOUBLE_EQ(estimateUs(m, CollId::kAllReduce, kProtoLL, 32, 1 << 24),
                   estimateUs(m, CollId::kAllReduce, kProtoLL, 16, 1 << 24));
  EXPECT_EQ(estimateUs(hopperModel(1), CollId::kAllReduce, kProtoSimple, 1, 1 << 20), 0.0);
  EXPECT_EQ(estimateUs(hopperModel(0), CollId::kAllReduce, kProtoSimple, 1, 1 << 20), -1.0);
}

// The symmetric kernels: their base at 0 bytes (AllGather only stores; the others load from their
// peers) plus Direct's price of the peers past the first, then the bytes a rank moves across:
// AllReduce's one hop loads n - 1 whole buffers, its two hops load and store (n - 1) / n of one
// each, and ReduceScatter moves a quarter of what the one-hop AllReduce does on 4 ranks;
// nondecreasing. The bandwidth grows with the CTAs up to the link's.
TEST(PlanEstimate, SymmetricPricesTheBytesMovedAcross) {
  const CommModel m = directModel(4);
  for (CollId coll : kColls) {
    const double base = coll == CollId::kAllGather ? kSymmetricStoreBaseUs : kSymmetricLoadBaseUs;
    EXPECT_DOUBLE_EQ(estimateSymmetricUs(m, coll, 16, 0, false), base + 2 * kDirectPeerLatencyUs);
    double last = 0;
    for (size_t bytes : sweepSizes()) {
      const double us = estimateSymmetricUs(m, coll, 16, bytes, coll == CollId::kAllReduce);
      EXPECT_GE(us, last);
      last = us;
    }
  }
  auto bytesUs = [&](CollId coll, bool twoShot) {
    return estimateSymmetricUs(m, coll, 16, 1 << 20, twoShot) - estimateSymmetricUs(m, coll, 16, 0, twoShot);
  };
  EXPECT_NEAR(bytesUs(CollId::kAllReduce, false), 4 * bytesUs(CollId::kReduceScatter, false), 1e-9);
  EXPECT_NEAR(bytesUs(CollId::kAllReduce, true), 2 * bytesUs(CollId::kReduceScatter, false), 1e-9);
  EXPECT_NEAR(bytesUs(CollId::kAllGather, false), bytesUs(CollId::kReduceScatter, false), 1e-9);
  const double acrossBytes = 3.0 * (1 << 20) / 4;  // AllGather of 1 MiB on 4 ranks: 3 peers' quarters
  const double oneCta = estimateSymmetricUs(m, CollId::kAllGather, 1, 1 << 20, false);
  EXPECT_NEAR(oneCta - kSymmetricStoreBaseUs - 2 * kDirectPeerLatencyUs, acrossBytes / (1000.0 * kSymmetricCtaGBps),
              1e-9);
  const double linkGBps = m.bwPerChannelGBps * m.maxChannels * kSymmetricBwFactor;
  EXPECT_NEAR(bytesUs(CollId::kAllGather, false), acrossBytes / (1000.0 * linkGBps), 1e-9);
  EXPECT_EQ(estimateSymmetricUs(hopperModel(4), CollId::kAllReduce, 16, 8, true), -1.0);  // no direct channels
  EXPECT_EQ(estimateSymmetricUs(directModel(1), CollId::kAllReduce, 16, 8, true), 0.0);
}

TEST(PlanEstimate, DirectIsOneHopOverTheBusiestPort) {
  CommModel m = directModel(4);
  // One hop whatever the collective, and the reduction where the receivers reduce.
  for (CollId coll : kColls) {
    bool copies = coll == CollId::kAllGather || coll == CollId::kBroadcast;
    EXPECT_DOUBLE_EQ(estimateDirectUs(m, coll, 16, 0), kDirectBaseLatencyUs + 2 * kDirectPeerLatencyUs +
                                                           m.hopLatencyUs[kProtoLL] +
                                                           (copies ? 0.0 : kDirectReduceLatencyUs));
  }
  // Each peer past the first adds its part of the latency.
  EXPECT_DOUBLE_EQ(
      estimateDirectUs(m, CollId::kAllGather, 16, 0) - estimateDirectUs(directModel(2), CollId::kAllGather, 16, 0),
      2 * kDirectPeerLatencyUs);
  // ReduceScatter sends one quarter to each of 3 peers, AllReduce everything: 4x the bytes per port.
  // AllGather moves ReduceScatter's bytes without reducing them, faster.
  auto bytesUs = [&](CollId coll) { return estimateDirectUs(m, coll, 16, 1 << 20) - estimateDirectUs(m, coll, 16, 0); };
  EXPECT_NEAR(bytesUs(CollId::kAllReduce), 4 * bytesUs(CollId::kReduceScatter), 1e-9);
  EXPECT_NEAR(bytesUs(CollId::kAllGather),
              bytesUs(CollId::kReduceScatter) * kDirectReduceBwFactor / kDirectCopyBwFactor, 1e-9);
  EXPECT_EQ(estimateDirectUs(hopperModel(4), CollId::kAllReduce, 16, 8), -1.0);  // no direct channels
}

}  // namespace
}  // namespace braid::plan
