// Tests of the direct algorithms of the device layer (src/device/coll/direct_colls.h,
// direct_simple_colls.h) without transports: every rank of 2-8 is emulated on ONE GPU with the
// harness of device_ring_test.cu (device_ring_harness.h), whose direct channels connect every rank
// to every other with LL and Simple FIFOs in that GPU's memory. The kernels of an operation run
// concurrently on one stream per rank.
//
// Inputs are random and different per rank, outputs poisoned with a guard after them; integers and
// the integer-valued floats of Sum/Prod/Max/Min compare exactly, Avg and PreMulSum within the
// harness's stated tolerance per type. A hang raises the abort flag, which the kernels honour.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdio>
#include <vector>

#include "device_ring_harness.h"

namespace braid {
namespace {

using devtest::Buffers;
using devtest::OpSpec;
using devtest::RingEmulation;

const CollId kColls[] = {CollId::kBroadcast, CollId::kReduce, CollId::kAllGather, CollId::kReduceScatter,
                         CollId::kAllReduce};

// The direct variants: LL (one hop), Simple (one hop), and Simple's two-shot AllReduce.
struct Variant {
  int proto;
  bool twoShot;
};
const Variant kVariants[] = {{kProtoLL, false}, {kProtoSimple, false}, {kProtoSimple, true}};

// Every collective x variant x count (empty, one element, short blocks, several chunks of the
// Simple slot, counts that n does not divide) x in/out of place x nChannels x chunk, float Sum;
// pointers aligned to 4 bytes only in every other case.
TEST(DeviceDirect, CollectiveSweepFloatSum) {
  Buffers buffers;
  int checked = 0;
  for (const devtest::RingShape& shape : devtest::sweepRingShapes()) {
    const int n = shape.nranks;
    const int nChannels = shape.nChannels;
    RingEmulation ring(n, nChannels);
    int variant = 0;
    for (const Variant& v : kVariants) {
      for (CollId coll : kColls) {
        if (v.twoShot && coll != CollId::kAllReduce) continue;
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{100003}, int64_t{1} << 20}) {
          for (int inPlace = 0; inPlace < 2; inPlace++) {
            for (uint32_t chunk : {4096u, 0u}) {
              if (count >= 100003 && chunk != 0) continue;  // many chunks already
              OpSpec op;
              op.coll = coll;
              op.algo = DevAlgo::kDirect;
              op.proto = v.proto;
              op.twoShot = v.twoShot;
              op.count = count;
              op.inPlace = inPlace != 0;
              op.nChannels = nChannels;
              op.chunkBytes = chunk;
              op.root = variant % n;
              op.misalign = (variant / 2) % 2 == 1;
              op.seed = 3000 * n + variant;
              variant++;
              ASSERT_TRUE(devtest::runAndCheck(ring, buffers, op)) << op.describe(n);
              checked++;
            }
          }
        }
      }
    }
  }
  std::printf("checked %d operations\n", checked);
}

// Every type with Sum, every op (Avg included) on float, int32, bfloat16 and fp8, and a PreMulSum
// scalar, one-shot and two-shot, on 4 ranks: the reductions of the Simple direct path (FIFOs: in and
// out of place, offsets that differ by rank) or of the symmetric kernels (the same offset on every
// rank, at every element of a 16-byte pack; in place on two hops only).
void typeOpSweep(bool symmetric) {
  Buffers buffers;
  RingEmulation ring(4, 2);
  const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,   ncclInt64,      ncclUint64,
                                   ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  int seed = 0;
  for (bool twoShot : {false, true}) {
    for (ncclDataType_t t : kTypes) {
      std::vector<ncclRedOp_t> ops = {ncclSum};
      if (t == ncclFloat32 || t == ncclInt32 || t == ncclBfloat16 || t == ncclFloat8e4m3) {
        ops = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
      }
      for (ncclRedOp_t redOp : ops) {
        for (CollId coll : {CollId::kAllReduce, CollId::kReduceScatter, CollId::kReduce}) {
          if (twoShot && coll != CollId::kAllReduce) continue;
          OpSpec op;
          op.coll = coll;
          op.dtype = t;
          op.op = redOp;
          op.algo = DevAlgo::kDirect;
          op.proto = kProtoSimple;
          op.symmetric = symmetric;
          op.twoShot = twoShot;
          op.count = 50001;
          op.inPlace = seed % 2 == 0 && (!symmetric || twoShot);
          op.nChannels = 2;
          op.root = seed % 4;
          op.offsetElems = symmetric ? seed % 16 : (seed % 3 == 0 ? 1 : 0);
          op.rankStep = symmetric ? 0 : seed % 2;
          op.seed = (symmetric ? 177 : 77) + seed++;
          ASSERT_TRUE(devtest::runAndCheck(ring, buffers, op)) << op.describe(4);
        }
      }
    }
  }
  OpSpec op;
  op.coll = CollId::kAllReduce;
  op.dtype = ncclFloat32;
  op.preMulScalar = 0.375;
  op.algo = DevAlgo::kDirect;
  op.proto = kProtoSimple;
  op.symmetric = symmetric;
  op.twoShot = true;
  op.count = 20000;
  op.nChannels = 2;
  ASSERT_TRUE(devtest::runAndCheck(ring, buffers, op)) << op.describe(4);
}

TEST(DeviceDirect, SimpleTypeOpSweep) { typeOpSweep(false); }

TEST(DeviceDirect, SymmetricTypeOpSweep) { typeOpSweep(true); }

// The symmetric kernels (coll/symmetric_colls.h): every collective, the one- and two-hop
// AllReduce (one hop out of place only, as the planner offers it), counts from one element to
// several per CTA and ones n does not divide, in and out of place, 1 and 3 CTAs, aligned and
// misaligned buffers (the same offset on every rank, as in a symmetric window), float Sum.
TEST(DeviceDirect, SymmetricSweepFloatSum) {
  Buffers buffers;
  int checked = 0;
  for (const devtest::RingShape& shape : devtest::sweepRingShapes()) {
    const int n = shape.nranks;
    const int nChannels = shape.nChannels;
    RingEmulation ring(n, nChannels);
    int variant = 0;
    for (bool twoShot : {false, true}) {
      for (CollId coll : kColls) {
        if (twoShot && coll != CollId::kAllReduce) continue;
        for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{100003}, int64_t{1} << 20}) {
          for (int inPlace = 0; inPlace < 2; inPlace++) {
            if (coll == CollId::kAllReduce && !twoShot && inPlace) continue;
            OpSpec op;
            op.coll = coll;
            op.algo = DevAlgo::kDirect;
            op.proto = kProtoSimple;
            op.symmetric = true;
            op.twoShot = twoShot;
            op.count = count;
            op.inPlace = inPlace != 0;
            op.nChannels = nChannels;
            op.root = variant % n;
            op.misalign = variant % 3 == 1;
            op.seed = 5000 * n + variant;
            variant++;
            ASSERT_TRUE(devtest::runAndCheck(ring, buffers, op)) << op.describe(n);
            checked++;
          }
        }
      }
    }
  }
  std::printf("checked %d operations\n", checked);
}

// Direct and ring operations of both protocols back to back without host synchronization: the
// direct connections' steps carry over between kernels and protocols, as the rings' do.
TEST(DeviceDirect, BackToBackMixedWithRings) {
  RingEmulation ring(4, 3);
  for (int round = 0; round < 3; round++) {
    std::vector<OpSpec> ops;
    for (int k = 0; k < 12; k++) {
      OpSpec op;
      op.coll = kColls[(k + round) % 5];
      op.dtype = k % 2 == 0 ? ncclInt32 : ncclFloat32;
      op.algo = k % 3 == 2 ? DevAlgo::kRing : DevAlgo::kDirect;
      op.proto = k % 2 == 0 ? kProtoSimple : kProtoLL;
      op.twoShot = op.coll == CollId::kAllReduce && op.proto == kProtoSimple && k % 4 == 0;
      // Two direct Simple operations of each round on the symmetric kernels, between FIFO ones.
      op.symmetric = op.algo == DevAlgo::kDirect && op.proto == kProtoSimple && k % 4 == 0 &&
                     !(op.coll == CollId::kAllReduce && !op.twoShot && k % 2 == 1);
      op.count = k % 4 == 0 ? 300001 : 1 + 517 * k;
      op.inPlace = k % 2 == 1;
      op.nChannels = 1 + (k + round) % 3;
      op.chunkBytes = k % 3 == 0 ? 8192 : 0;
      op.root = k % 4;
      op.seed = 900 * round + k;
      ops.push_back(op);
    }
    ASSERT_TRUE(devtest::runBatchAndCheck(ring, ops)) << "round " << round;
  }
}

// A lone rank of a Simple direct operation waits for its peers, and leaves once abort is raised.
TEST(DeviceDirect, AbortUnblocksWaitingKernel) {
  RingEmulation ring(3, 2);
  EXPECT_TRUE(devtest::abortLoneRank(ring, kProtoSimple, DevAlgo::kDirect));
}

// Not a benchmark (every rank shares one GPU's memory): the time of mid-size AllReduces by
// algorithm, so that a gross regression is visible.
TEST(DeviceDirect, MidSizeAllReduceTiming) {
  RingEmulation ring(4, 8);
  for (int64_t bytes : {int64_t{512} << 10, int64_t{4} << 20}) {
    const double ringUs = devtest::timeAllReduce(ring, bytes, kProtoSimple);
    const double oneShotUs = devtest::timeAllReduce(ring, bytes, kProtoSimple, DevAlgo::kDirect, false);
    const double twoShotUs = devtest::timeAllReduce(ring, bytes, kProtoSimple, DevAlgo::kDirect, true);
    ASSERT_GT(ringUs, 0.0);
    ASSERT_GT(oneShotUs, 0.0);
    ASSERT_GT(twoShotUs, 0.0);
    std::printf(
        "4 ranks on one GPU, 8 channels, AllReduce of %lld KiB: ring Simple %.1f us, direct Simple %.1f us, "
        "two-shot %.1f us\n",
        static_cast<long long>(bytes >> 10), ringUs, oneShotUs, twoShotUs);
  }
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine; device_direct_test needs one GPU\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
