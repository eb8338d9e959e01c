// The planner's decisions: protocol by size, algorithm (ring, tree, Direct, symmetric), channels,
// threads, clusters, chunk bounds and grain, filters that leave nothing, the one-rank case, thread
// overrides.
#include "plan_test_util.h"

namespace braid::plan {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

TEST(PlanDecide, FilterWithoutRingOrProtocolIsInvalidUsage) {
  CommModel m = hopperModel(8);
  Decision d{};
  Filter noRing = parse("allreduce:tree", nullptr);
  EXPECT_EQ(decide(m, noRing, CollId::kAllReduce, 1 << 20, &d), ncclInvalidUsage);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("NCCL_ALGO"), std::string::npos) << warn;
  EXPECT_NE(warn.find("AllReduce"), std::string::npos) << warn;
  // NCCL 2.31's rule: Broadcast, which the string does not name, has no algorithm at all.
  EXPECT_EQ(decide(m, noRing, CollId::kBroadcast, 1 << 20, &d), ncclInvalidUsage);
  warn = logLastError();
  EXPECT_NE(warn.find("NCCL_ALGO names no algorithm for Broadcast"), std::string::npos) << warn;
  EXPECT_EQ(decide(m, parse("ring;allreduce:tree", nullptr), CollId::kBroadcast, 1 << 20, &d), ncclSuccess);

  Filter onlyLl128 = parse(nullptr, "reducescatter:LL128");
  EXPECT_EQ(decide(hopperModel(8, /*ll128Ok=*/false), onlyLl128, CollId::kReduceScatter, 4096, &d), ncclInvalidUsage);
  warn = logLastError();
  EXPECT_NE(warn.find("NCCL_PROTO"), std::string::npos) << warn;
  EXPECT_NE(warn.find("ReduceScatter"), std::string::npos) << warn;
  EXPECT_EQ(decideOk(m, onlyLl128, CollId::kReduceScatter, 4096).proto, kProtoLL128);

  // Rings across hosts move Simple slots only: LL is never chosen, and a filter of LL alone leaves nothing.
  CommModel net = hopperModel(8, /*ll128Ok=*/false);
  net.llOk = false;
  net.nNodes = 2;
  for (size_t bytes : {size_t{8}, size_t{4096}, size_t{1} << 26}) {
    EXPECT_EQ(decideOk(net, allowAll(), CollId::kAllReduce, bytes).proto, kProtoSimple) << bytes;
  }
  EXPECT_EQ(decide(net, parse(nullptr, "LL"), CollId::kAllGather, 64, &d), ncclInvalidUsage);
  warn = logLastError();
  EXPECT_NE(warn.find("cross hosts"), std::string::npos) << warn;
}

TEST(PlanDecide, TreeTakesSmallAllReducesAcrossHosts) {
  for (auto [hosts, perHost] : {std::pair{2, 2}, std::pair{4, 1}, std::pair{8, 4}}) {
    SCOPED_TRACE(std::to_string(hosts) + " hosts of " + std::to_string(perHost));
    CommModel m = netModel(hosts, perHost);
    Decision small = decideOk(m, allowAll(), CollId::kAllReduce, 64);
    EXPECT_EQ(small.algo, kAlgoTree);
    EXPECT_EQ(small.proto, kProtoLL);
    EXPECT_EQ(small.nChannels, kNetLlChannels);
    // A step per channel part where the slot holds it (every step is a network message).
    EXPECT_EQ(decideOk(m, allowAll(), CollId::kAllReduce, 4096).chunkBytes, 4096u);
    EXPECT_LT(estimateTreeUs(m, kProtoLL, 1, 64), estimateUs(m, CollId::kAllReduce, kProtoLL, 1, 64));
    EXPECT_EQ(decideOk(m, allowAll(), CollId::kAllReduce, size_t{1} << 28).algo, kAlgoRing);
    // Other collectives have no tree; NCCL_ALGO=Tree forces it at every size, NCCL_ALGO=Ring keeps it out.
    EXPECT_EQ(decideOk(m, allowAll(), CollId::kAllGather, 64).algo, kAlgoRing);
    Decision forced = decideOk(m, parse("Tree", nullptr), CollId::kAllReduce, size_t{1} << 28);
    EXPECT_EQ(forced.algo, kAlgoTree);
    EXPECT_EQ(forced.proto, kProtoSimple);
    EXPECT_GE(forced.nChannels, 1);
    EXPECT_LE(forced.nChannels, m.nTreeChannels);
    EXPECT_GT(forced.chunkBytes, 0u);
    EXPECT_EQ(forced.chunkBytes % kChunkGrainBytes[kProtoSimple], 0u);
    EXPECT_EQ(decideOk(m, parse("Ring", nullptr), CollId::kAllReduce, 64).algo, kAlgoRing);
    // Ring LL across hosts keeps to one channel too.
    EXPECT_EQ(decideOk(m, parse("Ring", "LL"), CollId::kAllReduce, 1 << 20).nChannels, kNetLlChannels);
  }
  // Without LL across hosts the tree runs Simple; one host has no tree.
  CommModel noLl = netModel(2, 2);
  noLl.llOk = false;
  Decision d = decideOk(noLl, allowAll(), CollId::kAllReduce, 64);
  EXPECT_EQ(d.algo, kAlgoTree);
  EXPECT_EQ(d.proto, kProtoSimple);
  EXPECT_EQ(estimateTreeUs(hopperModel(4), kProtoLL, 1, 64), -1.0);
  Decision d2{};
  EXPECT_EQ(decide(hopperModel(4), parse("Tree", nullptr), CollId::kAllReduce, 64, &d2), ncclInvalidUsage);
  EXPECT_NE(std::string(logLastError()).find("no Tree here"), std::string::npos) << logLastError();
}

// With topo's one direct channel across hosts (LL on the network), the smallest operations take
// Direct: one network hop where a ring or a tree takes two or more (a two-rank ring of the other
// collectives takes one too, and keeps them). Large ones keep the ring.
TEST(PlanDecide, DirectTakesTheSmallestOperationsAcrossHosts) {
  for (auto [hosts, perHost] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{4, 1}}) {
    SCOPED_TRACE(std::to_string(hosts) + " hosts of " + std::to_string(perHost));
    CommModel m = netModel(hosts, perHost);
    m.maxDirectChannels = 1;
    for (CollId coll : kColls) {
      if (m.nranks == 2 && coll != CollId::kAllReduce) continue;
      Decision d = decideOk(m, allowAll(), coll, 64);
      EXPECT_EQ(d.algo, kAlgoDirect) << collName(coll);
      EXPECT_EQ(d.nChannels, 1) << collName(coll);
      EXPECT_EQ(decideOk(m, allowAll(), coll, size_t{1} << 28).algo, kAlgoRing) << collName(coll);
    }
    EXPECT_LT(estimateDirectUs(m, CollId::kAllReduce, 1, 64), estimateTreeUs(m, kProtoLL, 1, 64));
  }
}

// Direct on Simple exists only where the direct connections carry Simple FIFOs
// (BRAID_DIRECT_SIMPLE_BUFFSIZE); there the AllReduce of more than two ranks takes the two-shot at
// mid sizes, within the FIFO's slots and the direct channels, and the ring stays for large ones.
TEST(PlanDecide, DirectSimpleNeedsItsFifos) {
  const Filter directSimple = parse("Direct", "Simple");
  Decision d{};
  EXPECT_EQ(decide(directModel(4), directSimple, CollId::kAllReduce, 4 << 20, &d), ncclInvalidUsage);
  for (int n : {2, 4, 8}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    CommModel m = directModel(n);
    m.directSimpleSlotBytes = 64 << 10;
    d = decideOk(m, directSimple, CollId::kAllReduce, 4 << 20);
    EXPECT_EQ(d.algo, kAlgoDirect);
    EXPECT_EQ(d.proto, kProtoSimple);
    EXPECT_EQ(d.twoShot, n > 2);
    EXPECT_EQ(d.chunkBytes, 64u << 10);
    EXPECT_LE(d.nChannels, m.maxDirectChannels);
    EXPECT_EQ(d.nThreads, 512);
    Decision rs = decideOk(m, directSimple, CollId::kReduceScatter, 4 << 20);
    EXPECT_FALSE(rs.twoShot);
    EXPECT_EQ(decideOk(m, directSimple, CollId::kAllReduce, 64).nThreads, 128);
    Decision automatic = decideOk(m, allowAll(), CollId::kAllReduce, 4 << 20);
    if (n > 2) {
      EXPECT_TRUE(automatic.algo == kAlgoDirect && automatic.proto == kProtoSimple && automatic.twoShot);
    }
    EXPECT_EQ(decideOk(m, allowAll(), CollId::kAllReduce, size_t{256} << 20).algo, kAlgoRing);
    CommModel preMul = m;
    preMul.userPreMulSum = true;
    EXPECT_EQ(decide(preMul, directSimple, CollId::kAllReduce, 4 << 20, &d), ncclInvalidUsage);
  }
}

// BRAID_DIRECT_ALLREDUCE_HOPS pins the Direct/Simple AllReduce to one or two hops at every size;
// other collectives and two ranks have only the one.
TEST(PlanDecide, DirectAllReduceHopsPinsTheShape) {
  const Filter directSimple = parse("Direct", "Simple");
  for (int n : {2, 4}) {
    CommModel m = directModel(n);
    m.directSimpleSlotBytes = 64 << 10;
    for (size_t bytes : {size_t{64} << 10, size_t{16} << 20}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(bytes) + " bytes");
      m.directAllReduceHops = 1;
      EXPECT_FALSE(decideOk(m, directSimple, CollId::kAllReduce, bytes).twoShot);
      m.directAllReduceHops = 2;
      EXPECT_EQ(decideOk(m, directSimple, CollId::kAllReduce, bytes).twoShot, n > 2);
      EXPECT_FALSE(decideOk(m, directSimple, CollId::kAllGather, bytes).twoShot);
    }
  }
}

Decision decideSymmetric(const CommModel& m, const Filter& f, const SymmetricBuffers& sym, CollId coll, size_t bytes) {
  OpConstraints op;
  op.symmetric = sym;
  Decision d{};
  EXPECT_EQ(decide(m, f, op, coll, bytes, &d), ncclSuccess) << collName(coll) << " " << bytes;
  return d;
}

// The symmetric kernels need no Direct/Simple FIFO, only the direct channels and the buffers that
// each collective's peers touch: the send buffers where peers load (ReduceScatter, Reduce), the
// receive buffers where they store (AllGather, Broadcast). AllReduce takes two hops where both are
// windows (in place is safe there) and one where only the send buffers are; nothing else steers it
// (ranks may differ in whether they run in place).
TEST(PlanDecide, SymmetricKernelsTakeTheBuffersTheirPeersTouch) {
  const Filter directSimple = parse("Direct", "Simple");
  const SymmetricBuffers none{}, sendOnly{true, false}, recvOnly{false, true}, both{true, true};
  for (int n : {2, 4, 8}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    const CommModel m = directModel(n);
    ASSERT_EQ(m.directSimpleSlotBytes, 0u);
    const size_t bytes = size_t{1} << 20;
    OpConstraints op;
    Decision d{};
    EXPECT_EQ(decide(m, directSimple, op, CollId::kAllReduce, bytes, &d), ncclInvalidUsage);  // no FIFO, no window
    for (CollId coll : {CollId::kReduceScatter, CollId::kReduce}) {
      d = decideSymmetric(m, directSimple, sendOnly, coll, bytes);
      EXPECT_TRUE(d.symmetric && d.algo == kAlgoDirect && d.proto == kProtoSimple && !d.twoShot);
      op.symmetric = recvOnly;
      EXPECT_EQ(decide(m, directSimple, op, coll, bytes, &d), ncclInvalidUsage);
    }
    for (CollId coll : {CollId::kAllGather, CollId::kBroadcast}) {
      EXPECT_TRUE(decideSymmetric(m, directSimple, recvOnly, coll, bytes).symmetric);
      op.symmetric = sendOnly;
      EXPECT_EQ(decide(m, directSimple, op, coll, bytes, &d), ncclInvalidUsage);
    }
    for (size_t size : {size_t{64}, bytes, size_t{256} << 20}) {
      d = decideSymmetric(m, directSimple, sendOnly, CollId::kAllReduce, size);
      EXPECT_TRUE(d.symmetric && !d.twoShot);
      d = decideSymmetric(m, directSimple, both, CollId::kAllReduce, size);
      EXPECT_TRUE(d.symmetric && d.twoShot);
    }
    op.symmetric = recvOnly;
    EXPECT_EQ(decide(m, directSimple, op, CollId::kAllReduce, bytes, &d), ncclInvalidUsage);
    // BRAID_DIRECT_ALLREDUCE_HOPS pins the FIFO path only: the windows decide here.
    CommModel pinned = m;
    pinned.directAllReduceHops = 1;
    EXPECT_TRUE(decideSymmetric(pinned, directSimple, both, CollId::kAllReduce, bytes).twoShot);
    // Fit: within the direct channels, a Simple CTA's threads.
    d = decideSymmetric(m, directSimple, both, CollId::kAllReduce, size_t{64} << 20);
    EXPECT_LE(d.nChannels, m.maxDirectChannels);
    EXPECT_GE(d.nChannels, 1);
    EXPECT_EQ(d.nThreads, 512);
    EXPECT_LT(decideSymmetric(m, directSimple, both, CollId::kAllReduce, 64).nThreads, 512);
    // NCCL_SYM_CTAS and NCCL_NTHREADS: exactly that many, within the direct channels.
    CommModel forced = m;
    forced.symmetricCtas = 3;
    forced.nthreadsOverride = 256;
    for (size_t size : {size_t{64}, size_t{64} << 20}) {
      d = decideSymmetric(forced, directSimple, both, CollId::kAllGather, size);
      EXPECT_EQ(d.nChannels, 3);
      EXPECT_EQ(d.nThreads, 256);
    }
    forced.symmetricCtas = 1000;
    EXPECT_EQ(decideSymmetric(forced, directSimple, both, CollId::kAllGather, 64).nChannels, m.maxDirectChannels);
    // No direct channels (a host of PCIe peers): nothing symmetric.
    CommModel noDirect = m;
    noDirect.maxDirectChannels = 0;
    op.symmetric = both;
    EXPECT_EQ(decide(noDirect, directSimple, op, CollId::kAllGather, bytes, &d), ncclInvalidUsage);
    // Every algorithm allowed: never the symmetric kernels without the buffers.
    for (CollId coll : kColls) {
      EXPECT_FALSE(decideSymmetric(m, allowAll(), none, coll, size_t{4} << 20).symmetric);
      EXPECT_FALSE(decideSymmetric(m, allowAll(), none, coll, 64).symmetric);
    }
  }
}

// Every algorithm allowed on windows: the symmetric kernels from kSymmetricPreferredBytes to
// kSymmetricPreferredMaxBytes (AllReduce only with both buffers windows: two hops), where they
// were measured faster than the plans whose estimates are lower; the estimates below and above
// (where the ring's are lower; AllGather has no bound).
TEST(PlanDecide, SymmetricKernelsTakeTheMeasuredMidSizes) {
  const SymmetricBuffers sendOnly{true, false}, both{true, true};
  for (int n : {2, 4}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    const CommModel m = directModel(n);
    for (CollId coll : {CollId::kAllGather, CollId::kReduceScatter, CollId::kAllReduce}) {
      SCOPED_TRACE(collName(coll));
      const size_t from = kSymmetricPreferredBytes[static_cast<int>(coll)];
      const size_t to = std::min<uint64_t>(kSymmetricPreferredMaxBytes[static_cast<int>(coll)], uint64_t{1} << 30);
      for (size_t bytes : {from, from * 2, to}) {
        const Decision d = decideSymmetric(m, allowAll(), both, coll, bytes);
        EXPECT_TRUE(d.symmetric && d.algo == kAlgoDirect && d.proto == kProtoSimple);
        EXPECT_EQ(d.twoShot, coll == CollId::kAllReduce);
        EXPECT_DOUBLE_EQ(d.estimatedUs, estimateSymmetricUs(m, coll, m.maxDirectChannels, bytes, d.twoShot));
      }
      for (size_t bytes : {from / 4, to * 4}) {
        if (bytes > to && coll == CollId::kAllGather) continue;  // no upper bound
        const Decision d = decideSymmetric(m, allowAll(), both, coll, bytes);
        const Decision plain = decideSymmetric(m, allowAll(), SymmetricBuffers{}, coll, bytes);
        EXPECT_EQ(d.symmetric, d.estimatedUs < plain.estimatedUs);
        EXPECT_LE(d.estimatedUs, plain.estimatedUs);
      }
      // Two ranks: a one-step ring or Direct is cheaper below (on 4 ranks the ring takes three
      // steps, and the estimates may take the symmetric kernels earlier).
      if (n == 2) {
        EXPECT_FALSE(decideSymmetric(m, allowAll(), both, coll, from / 4).symmetric);
      }
      if (coll != CollId::kAllGather) {
        EXPECT_FALSE(decideSymmetric(m, allowAll(), both, coll, to * 4).symmetric);
      }
    }
    const Decision oneHop = decideSymmetric(m, allowAll(), sendOnly, CollId::kAllReduce, size_t{16} << 20);
    EXPECT_FALSE(oneHop.twoShot);  // not preferred: by the estimates
    EXPECT_EQ(oneHop.symmetric,
              oneHop.estimatedUs < decideOk(m, allowAll(), CollId::kAllReduce, size_t{16} << 20).estimatedUs);
    EXPECT_FALSE(decideSymmetric(m, parse("Ring", ""), both, CollId::kAllGather, size_t{16} << 20).symmetric);
  }
}

TEST(PlanDecide, SmallIsLlLargeIsSimple) {
  Filter all = allowAll();
  for (int n = 2; n <= 8; ++n) {
    for (bool ll128 : {false, true}) {
      for (CollId coll : kColls) {
        CommModel m = hopperModel(n, ll128);
        EXPECT_EQ(decideOk(m, all, coll, 8).proto, kProtoLL) << n << " " << collName(coll);
        EXPECT_EQ(decideOk(m, all, coll, size_t{256} << 20).proto, kProtoSimple) << n << " " << collName(coll);
      }
    }
  }
  Decision d = decideOk(hopperModel(8), all, CollId::kAllReduce, 8);
  EXPECT_EQ(d.algo, kAlgoRing);
  EXPECT_EQ(d.nChannels, 1);
  EXPECT_EQ(d.chunkBytes, 16u);
  EXPECT_EQ(decideOk(hopperModel(8), all, CollId::kAllReduce, size_t{256} << 20).nChannels, 16);
}

// Every decision of the sweep respects the bounds the kernels rely on.
void checkDecision(const CommModel& m, CollId coll, size_t bytes, const Decision& d) {
  SCOPED_TRACE(std::string(collName(coll)) + " " + std::to_string(bytes) + " bytes, " + std::to_string(m.nranks) +
               " ranks, " + algoName(d.algo) + "/" + protoName(d.proto));
  EXPECT_TRUE(d.algo == kAlgoRing || d.algo == kAlgoDirect);
  EXPECT_GE(d.nChannels, 1);
  if (d.algo == kAlgoDirect) {
    EXPECT_TRUE(d.proto == kProtoLL || (d.proto == kProtoSimple && m.directSimpleSlotBytes > 0));
    EXPECT_LE(d.nChannels, m.maxDirectChannels);
  } else {
    EXPECT_LE(d.nChannels, m.maxChannels);
  }
  EXPECT_TRUE(!d.twoShot || (d.algo == kAlgoDirect && d.proto == kProtoSimple && coll == CollId::kAllReduce));
  EXPECT_EQ(d.nThreads % 32, 0);
  EXPECT_GE(d.nThreads, 64);
  EXPECT_LE(d.nThreads, d.proto == kProtoLL128 ? 640 : 512);
  EXPECT_GT(d.chunkBytes, 0u);
  EXPECT_EQ(d.chunkBytes % kChunkGrainBytes[d.proto], 0u);
  EXPECT_LE(d.chunkBytes,
            d.algo == kAlgoDirect && d.proto == kProtoSimple ? m.directSimpleSlotBytes : m.slotPayloadBytes[d.proto]);
  if (!m.ll128Ok) {
    EXPECT_NE(d.proto, kProtoLL128);
  }
  if (m.nranks == 1) {
    EXPECT_EQ(d.proto, kProtoSimple);
    EXPECT_EQ(d.nChannels, 1);
    EXPECT_EQ(d.estimatedUs, 0.0);
  } else {
    EXPECT_GT(d.estimatedUs, 0.0);
  }
}

TEST(PlanDecide, SweepBoundsChannelsAndEstimates) {
  Filter all = allowAll();
  for (int n = 1; n <= 8; ++n) {
    for (int variant = 0; variant < 4; ++variant) {  // no LL128, LL128, LL128 and Direct, Direct on Simple too
      CommModel m = variant >= 2 ? directModel(n) : hopperModel(n, variant == 1);
      if (variant == 3) m.directSimpleSlotBytes = 64 << 10;
      for (CollId coll : kColls) {
        int lastChannels[3][kNumProtos] = {};  // per algorithm (two-shot apart) and protocol: their CTA rules differ
        double lastUs = -1;
        for (size_t bytes : sweepSizes()) {
          Decision d = decideOk(m, all, coll, bytes);
          checkDecision(m, coll, bytes, d);
          int& last = lastChannels[d.twoShot ? 2 : (d.algo == kAlgoDirect ? 1 : 0)][d.proto];
          EXPECT_GE(d.nChannels, last) << collName(coll) << " " << bytes << " n=" << n;
          EXPECT_GE(d.estimatedUs, lastUs) << collName(coll) << " " << bytes << " n=" << n;
          last = d.nChannels;
          lastUs = d.estimatedUs;
        }
      }
    }
  }
}

TEST(PlanDecide, DirectForSmallOperationsRingForLarge) {
  Filter all = allowAll();
  for (int n = 2; n <= 8; ++n) {
    for (CollId coll : kColls) {
      // Direct's one hop costs a ring's base, more with each peer up to 4 ranks, and a reduction
      // more (tuning_constants.h): it wins for AllReduce (2(n-1) ring hops) from 2 ranks, for
      // AllGather and ReduceScatter (n-1) from 3, and against the cheaper hops of a chain, Broadcast
      // from 6 and Reduce from 7.
      constexpr int kDirectFrom[kNumColls] = {6, 7, 3, 3, 2};  // by CollId
      bool direct = n >= kDirectFrom[static_cast<int>(coll)];
      CommModel m = directModel(n);
      Decision d = decideOk(m, all, coll, 8);
      EXPECT_EQ(d.algo, direct ? kAlgoDirect : kAlgoRing) << n << " " << collName(coll);
      EXPECT_EQ(d.proto, kProtoLL);
      EXPECT_EQ(d.nChannels, 1);
      if (direct) {
        EXPECT_EQ(d.nThreads, kDirectThreads);
        EXPECT_EQ(d.chunkBytes, 16u);
      }
      EXPECT_EQ(decideOk(m, all, coll, size_t{256} << 20).algo, kAlgoRing) << n << " " << collName(coll);
    }
  }
  // Two ranks: Direct up to the mid sizes where its one hop still beats the ring's two.
  EXPECT_EQ(decideOk(directModel(2), all, CollId::kAllReduce, size_t{32} << 10).algo, kAlgoDirect);
  // NCCL_ALGO=Ring keeps Ring; NCCL_PROTO without LL leaves no Direct.
  EXPECT_EQ(decideOk(directModel(4), parse("ring", nullptr), CollId::kAllReduce, 8).algo, kAlgoRing);
  EXPECT_EQ(decideOk(directModel(4), parse(nullptr, "simple"), CollId::kAllReduce, 8).algo, kAlgoRing);
}

TEST(PlanDecide, ForcedDirectFillsDirectChannelsWithinTheSlot) {
  Filter direct = parse("direct", nullptr);
  CommModel m = directModel(4);
  for (CollId coll : kColls) {
    for (size_t bytes : sweepSizes()) {
      Decision d = decideOk(m, direct, coll, bytes);
      EXPECT_EQ(d.algo, kAlgoDirect);
      checkDecision(m, coll, bytes, d);
    }
  }
  // AllReduce of 64 KiB: 3 peers x 64 KiB received, one CTA per 2 KiB: every channel, then
  // kMaxDirectThreads (12 KiB per CTA is 2 lines for each of 512 threads), one 4 KiB chunk per
  // connection.
  Decision d = decideOk(m, direct, CollId::kAllReduce, 64 << 10);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, kMaxDirectThreads);
  EXPECT_EQ(d.chunkBytes, 4096u);
  // AllGather of 64 KiB moves one 16 KiB rank block per connection: 48 KiB received.
  d = decideOk(m, direct, CollId::kAllGather, 64 << 10);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, 128);
  EXPECT_EQ(d.chunkBytes, 1024u);
  // 8 KiB AllGather: 6 KiB received, 3 CTAs.
  d = decideOk(m, direct, CollId::kAllGather, 8 << 10);
  EXPECT_EQ(d.nChannels, 3);
  EXPECT_EQ(d.chunkBytes, 688u);  // ceil(2 KiB / 3) on the 16-byte grain
  // Large: all channels, kMaxDirectThreads, a whole LL slot's payload per step.
  d = decideOk(m, direct, CollId::kAllReduce, size_t{64} << 20);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, kMaxDirectThreads);
  EXPECT_EQ(d.chunkBytes, m.slotPayloadBytes[kProtoLL]);
}

TEST(PlanDecide, DirectWithoutDirectChannelsOrLlIsInvalidUsage) {
  Filter direct = parse("allreduce:direct", nullptr);
  Decision d{};
  EXPECT_EQ(decide(hopperModel(4), direct, CollId::kAllReduce, 8, &d), ncclInvalidUsage);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("NCCL_ALGO"), std::string::npos) << warn;
  EXPECT_NE(warn.find("no Direct here: some pair is neither NVLink P2P"), std::string::npos) << warn;
  // A user PreMulSum op never plans Direct, and the WARN says why.
  CommModel premulSum = directModel(4);
  premulSum.userPreMulSum = true;
  EXPECT_EQ(decideOk(premulSum, allowAll(), CollId::kAllReduce, 8).algo, kAlgoRing);
  EXPECT_EQ(decide(premulSum, direct, CollId::kAllReduce, 8, &d), ncclInvalidUsage);
  warn = logLastError();
  EXPECT_NE(warn.find("no Direct for a ncclRedOpCreatePreMulSum op"), std::string::npos) << warn;
  EXPECT_EQ(decide(directModel(4), parse("direct", "simple"), CollId::kAllGather, 8, &d), ncclInvalidUsage);
  warn = logLastError();
  EXPECT_NE(warn.find("AllGather"), std::string::npos) << warn;
  CommModel bad = directModel(4);
  bad.maxDirectChannels = kMaxDirectChannels + 1;
  EXPECT_EQ(decide(bad, allowAll(), CollId::kAllReduce, 8, &d), ncclInternalError);
}

TEST(PlanDecide, ForcedProtocolsStayInBounds) {
  const char* protos[kNumProtos] = {"LL", "LL128", "Simple"};
  for (int p = 0; p < kNumProtos; ++p) {
    Filter f = parse(nullptr, protos[p]);
    for (int n : {2, 3, 8}) {
      CommModel m = hopperModel(n);
      for (CollId coll : kColls) {
        int lastChannels = 0;
        for (size_t bytes : sweepSizes()) {
          Decision d = decideOk(m, f, coll, bytes);
          EXPECT_EQ(d.proto, p);
          checkDecision(m, coll, bytes, d);
          EXPECT_GE(d.nChannels, lastChannels);
          lastChannels = d.nChannels;
        }
      }
    }
  }
}

TEST(PlanDecide, ChunkIsTheRankBlockOrAChainStepWithinTheSlot) {
  Filter simple = parse(nullptr, "simple");
  CommModel m = hopperModel(4);
  // 16 channels x 4 ranks x 256 KiB blocks: a ring moves a whole block per step.
  Decision d = decideOk(m, simple, CollId::kAllReduce, size_t{16} << 20);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, 512);
  EXPECT_EQ(d.chunkBytes, 256u << 10);
  // A chain (Broadcast) cuts a channel's 1 MiB into kStepsPerChain steps, but none below one pass
  // of the CTA or kMinChainStepBytes.
  EXPECT_EQ(decideOk(m, simple, CollId::kBroadcast, size_t{16} << 20).chunkBytes, (1u << 20) / kStepsPerChain);
  Filter ll = parse(nullptr, "ll");
  d = decideOk(m, ll, CollId::kBroadcast, size_t{1} << 20);  // 64 KiB per channel
  EXPECT_EQ(d.chunkBytes, kMinChainStepBytes);
  d = decideOk(m, ll, CollId::kBroadcast, size_t{16} << 10);  // one step per channel
  EXPECT_EQ(d.chunkBytes, (16u << 10) / d.nChannels);
  // Huge blocks: a whole slot per step.
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, size_t{4} << 30).chunkBytes, m.slotPayloadBytes[kProtoSimple]);
  // A block smaller than one pass of the CTA is one step.
  d = decideOk(m, simple, CollId::kAllGather, 4000);
  EXPECT_EQ(d.nChannels, 1);
  EXPECT_EQ(d.chunkBytes, 1008u);  // ceil(4000 / 4 ranks) on the 16-byte grain
  // LL128 chunks are whole warp passes of 480 bytes.
  Filter ll128 = parse(nullptr, "ll128");
  EXPECT_EQ(decideOk(m, ll128, CollId::kReduceScatter, 100).chunkBytes, 480u);
}

TEST(PlanDecide, LowLatencyProtocolsFillChannelsBeforeThreads) {
  CommModel m = hopperModel(4);  // 16 channels
  Filter ll = parse(nullptr, "ll");
  // LL: 8 B x 4 ranks per thread; 128-thread CTAs until all 16 channels are used, then doubling.
  Decision d = decideOk(m, ll, CollId::kAllReduce, 4096);
  EXPECT_EQ(d.nChannels, 1);
  EXPECT_EQ(d.nThreads, 128);
  d = decideOk(m, ll, CollId::kAllReduce, 64 << 10);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, 128);
  d = decideOk(m, ll, CollId::kAllReduce, 1 << 20);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, 256);  // kMaxGrownThreads: 512-thread LL CTAs step slower
  // LL128: 160-thread CTAs; threads grow only at 64 B per thread.
  Filter ll128 = parse(nullptr, "ll128");
  d = decideOk(m, ll128, CollId::kAllReduce, 64 << 10);
  EXPECT_EQ(d.nChannels, 16);
  EXPECT_EQ(d.nThreads, 160);
  d = decideOk(m, ll128, CollId::kAllReduce, 400 << 10);
  EXPECT_EQ(d.nThreads, 320);
  d = decideOk(m, ll128, CollId::kAllReduce, 64 << 20);
  EXPECT_EQ(d.nThreads, 320);  // kMaxGrownThreads: 640-thread LL128 CTAs step slower on one host
  CommModel hosts = netModel(2, 2);
  hosts.ll128Ok = true;
  EXPECT_EQ(decideOk(hosts, ll128, CollId::kAllReduce, 64 << 20).nThreads, 640);  // across hosts: up to kMaxThreads
  // A thread count the user set is kept, and channels shrink to fit it (the Simple rule).
  m.nthreadsOverride = 256;
  d = decideOk(m, ll, CollId::kAllReduce, 64 << 10);
  EXPECT_EQ(d.nThreads, 256);
  EXPECT_EQ(d.nChannels, 8);
}

TEST(PlanDecide, ChannelsThenThreadsShrinkForSmallOps) {
  Filter simple = parse(nullptr, "simple");
  CommModel m = hopperModel(8);
  // 512 threads x 64 B: one channel needs 32 KiB.
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, 32 << 10).nChannels, 1);
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, 32 << 10).nThreads, 512);
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, 64 << 10).nChannels, 2);
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, (32 << 10) - 1).nThreads, 256);
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, 1).nThreads, 128);
  Filter ll128 = parse(nullptr, "ll128");
  EXPECT_EQ(decideOk(m, ll128, CollId::kAllReduce, 1).nThreads, 160);
}

TEST(PlanDecide, ThreadOverrides) {
  Filter simple = parse(nullptr, "simple");
  Filter ll128 = parse(nullptr, "ll128");
  CommModel m = hopperModel(8);
  m.nthreadsOverride = 256;
  m.ll128NthreadsOverride = 320;
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, size_t{1} << 30).nThreads, 256);
  EXPECT_EQ(decideOk(m, ll128, CollId::kAllReduce, size_t{1} << 30).nThreads, 320);
  m.nthreadsOverride = 64;
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, size_t{1} << 30).nThreads, 64);
  // Invalid values are ignored (with one WARN per variable per process).
  for (int bad : {100, 32, 1024, 704}) {
    m.nthreadsOverride = bad;
    m.ll128NthreadsOverride = bad;
    EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, size_t{1} << 30).nThreads, 512) << bad;
    EXPECT_EQ(decideOk(m, ll128, CollId::kAllReduce, size_t{1} << 30).nThreads, 640) << bad;
  }
  // 544 is above Simple's 512 but within LL128's 640; 128 is below LL128's 160.
  m.nthreadsOverride = 544;
  m.ll128NthreadsOverride = 544;
  EXPECT_EQ(decideOk(m, simple, CollId::kAllReduce, size_t{1} << 30).nThreads, 512);
  EXPECT_EQ(decideOk(m, ll128, CollId::kAllReduce, size_t{1} << 30).nThreads, 544);
  m.ll128NthreadsOverride = 128;
  EXPECT_EQ(decideOk(m, ll128, CollId::kAllReduce, size_t{1} << 30).nThreads, 640);
}

TEST(PlanDecide, OneRankIsTrivialWhateverTheFilter) {
  CommModel m = hopperModel(1);
  Filter none = parse("allreduce:tree", "allreduce:ll");
  Decision d = decideOk(m, none, CollId::kAllReduce, size_t{1} << 20);
  EXPECT_EQ(d.proto, kProtoSimple);
  EXPECT_EQ(d.nChannels, 1);
  EXPECT_EQ(d.estimatedUs, 0.0);
  EXPECT_EQ(d.chunkBytes, m.slotPayloadBytes[kProtoSimple]);
  EXPECT_EQ(decideOk(m, none, CollId::kAllReduce, 0).chunkBytes, 16u);
}

TEST(PlanDecide, InconsistentModelIsInternalError) {
  Filter all = allowAll();
  Decision d{};
  CommModel m = hopperModel(8);
  m.maxChannels = 0;
  EXPECT_EQ(decide(m, all, CollId::kAllReduce, 1024, &d), ncclInternalError);
  m.maxChannels = kMaxChannels + 1;
  EXPECT_EQ(decide(m, all, CollId::kAllReduce, 1024, &d), ncclInternalError);
  m = hopperModel(8);
  m.bwPerChannelGBps = 0;
  EXPECT_EQ(decide(m, all, CollId::kAllReduce, 1024, &d), ncclInternalError);
  m = hopperModel(0);
  EXPECT_EQ(decide(m, all, CollId::kAllReduce, 1024, &d), ncclInternalError);
  m = hopperModel(8);
  m.slotPayloadBytes[kProtoSimple] = 8;
  EXPECT_EQ(decide(m, all, CollId::kAllReduce, 1024, &d), ncclInternalError);
  // A protocol whose slot cannot hold one grain is skipped, not chosen.
  m = hopperModel(8);
  m.slotPayloadBytes[kProtoLL] = 0;
  EXPECT_NE(decideOk(m, all, CollId::kAllReduce, 8).proto, kProtoLL);
}

// Left to the planner, kernels launch in clusters of kClusterCtas, except a two-rank AllGather or
// ReduceScatter ring of Simple steps (slower in clusters on 2 H200); a configured size is kept.
TEST(PlanDecide, ClustersAreThePlannersPickUnlessConfigured) {
  auto clusters = [](const CommModel& m, CollId coll, size_t bytes) {
    Decision d{};
    EXPECT_EQ(decide(m, allowAll(), coll, bytes, &d), ncclSuccess);
    return d.clusterSize;
  };
  const size_t large = 256u << 20;
  for (CollId coll : {CollId::kAllGather, CollId::kReduceScatter}) {
    EXPECT_EQ(clusters(hopperModel(2), coll, large), 0) << collName(coll);
    EXPECT_EQ(clusters(hopperModel(4), coll, large), kClusterCtas) << collName(coll);
    EXPECT_EQ(clusters(hopperModel(2), coll, 1024), kClusterCtas) << collName(coll);  // LL, not Simple
  }
  for (CollId coll : {CollId::kAllReduce, CollId::kBroadcast, CollId::kReduce}) {
    EXPECT_EQ(clusters(hopperModel(2), coll, large), kClusterCtas) << collName(coll);
  }
  for (int configured : {0, 2, 8}) {
    CommModel m = hopperModel(2);
    m.cgaClusterSize = configured;
    EXPECT_EQ(clusters(m, CollId::kReduceScatter, large), configured);
    EXPECT_EQ(clusters(m, CollId::kAllReduce, 1024), configured);
  }
}

// Registered rings: half the channels for the write-direct collectives and for a two-rank
// ReduceScatter (one read step per channel), all of them for the other read-direct ones.
TEST(PlanDecide, ZeroCopyTakesHalfTheChannelsWhereItKeepsTheBandwidth) {
  for (int nranks : {2, 4, 8}) {
    const CommModel m = hopperModel(nranks);
    for (CollId coll : {CollId::kAllReduce, CollId::kAllGather, CollId::kBroadcast}) {
      const CommModel zeroCopy = zeroCopyModel(m, coll);
      EXPECT_EQ(zeroCopy.maxChannels, m.maxChannels / 2) << collName(coll) << " " << nranks;
      EXPECT_DOUBLE_EQ(zeroCopy.maxChannels * zeroCopy.bwPerChannelGBps, m.maxChannels * m.bwPerChannelGBps);
      // Where the copy path takes LL or LL128, so does the zero-copy plan (which then stays on the copy
      // path); the Simple ring only where the copy path takes it too.
      for (size_t bytes : {size_t{64} << 10, size_t{2} << 20, size_t{256} << 20}) {
        const Decision copy = decideOk(m, allowAll(), coll, bytes);
        const Decision registered = decideOk(zeroCopy, allowAll(), coll, bytes);
        EXPECT_EQ(registered.proto == kProtoSimple, copy.proto == kProtoSimple)
            << collName(coll) << " " << nranks << " ranks, " << bytes << " bytes";
      }
    }
    EXPECT_EQ(zeroCopyModel(m, CollId::kReduce).maxChannels, m.maxChannels) << nranks;
    EXPECT_EQ(zeroCopyModel(m, CollId::kReduceScatter).maxChannels, nranks == 2 ? m.maxChannels / 2 : m.maxChannels)
        << nranks;
  }
  CommModel one = hopperModel(2);
  one.maxChannels = 1;
  EXPECT_EQ(zeroCopyModel(one, CollId::kReduceScatter).maxChannels, 1);
  EXPECT_EQ(
      decideOk(zeroCopyModel(hopperModel(2), CollId::kReduceScatter), allowAll(), CollId::kReduceScatter, 256u << 20)
          .nChannels,
      8);
}

}  // namespace
}  // namespace braid::plan
