// The plan of a queued collective (launch/planned_coll.h): the one resolution of the reduction
// (ncclAvg, ncclRedOpCreatePreMulSum ops) as the kernels apply it, the one table of plan::AlgoId to
// DevAlgo, and the paths and device work of one-rank operations, which need no connection.
#include "launch/planned_coll.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/comm.h"
#include "device/reduce/work_scalar.h"
#include "launch/collective_engine.h"
#include "launch/data_path_context.h"

namespace braid {
namespace {

CollTask allReduce(ncclDataType_t dtype, ncclRedOp_t op) {
  CollTask task{};
  task.coll = CollId::kAllReduce;
  task.sendbuff = reinterpret_cast<const void*>(0x7f0000010000);
  task.recvbuff = reinterpret_cast<void*>(0x7f0000020000);
  task.count = 1000;
  task.dtype = dtype;
  task.op = op;
  return task;
}

// A ncclRedOpCreatePreMulSum handle as enqueueColl leaves it: the op resolved into the task.
constexpr ncclRedOp_t kUserOp = static_cast<ncclRedOp_t>(static_cast<int>(ncclNumOps) + 5);

TEST(ResolveReduction, BuiltInOpsMapOneToOne) {
  EXPECT_EQ(DevRedOp::kSum, resolveReduction(allReduce(ncclFloat32, ncclSum), 4).op);
  EXPECT_EQ(DevRedOp::kProd, resolveReduction(allReduce(ncclInt32, ncclProd), 4).op);
  EXPECT_EQ(DevRedOp::kMax, resolveReduction(allReduce(ncclUint8, ncclMax), 4).op);
  EXPECT_EQ(DevRedOp::kMin, resolveReduction(allReduce(ncclFloat64, ncclMin), 4).op);
  const DevReduction sum = resolveReduction(allReduce(ncclInt64, ncclSum), 3);
  EXPECT_EQ(0u, sum.scalar);
  EXPECT_EQ(nullptr, sum.scalarPtr);
}

TEST(ResolveReduction, AvgPremultipliesFloatsAndDividesIntegers) {
  for (ncclDataType_t dtype : {ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64}) {
    for (int nranks : {2, 3, 8}) {
      const DevReduction r = resolveReduction(allReduce(dtype, ncclAvg), nranks);
      EXPECT_EQ(DevRedOp::kPreMulSum, r.op) << dtype;
      EXPECT_EQ(avgScalarBits(dtype, nranks), r.scalar) << dtype << " on " << nranks;
      EXPECT_EQ(nullptr, r.scalarPtr);
    }
  }
  uint64_t oneThird = 0;
  const float third = 1.0f / 3.0f;
  std::memcpy(&oneThird, &third, sizeof(third));
  EXPECT_EQ(oneThird, resolveReduction(allReduce(ncclFloat32, ncclAvg), 3).scalar);
  for (ncclDataType_t dtype : {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64}) {
    const DevReduction r = resolveReduction(allReduce(dtype, ncclAvg), 5);
    EXPECT_EQ(DevRedOp::kSumPostDiv, r.op) << dtype;
    EXPECT_EQ(5u, r.scalar);
  }
}

TEST(ResolveReduction, UserOpPremultipliesByItsScalar) {
  CollTask host = allReduce(ncclFloat32, kUserOp);
  const float scalar = 2.5f;
  std::memcpy(&host.scalarBits, &scalar, sizeof(scalar));
  DevReduction r = resolveReduction(host, 4);
  EXPECT_EQ(DevRedOp::kPreMulSum, r.op);
  EXPECT_EQ(preMulScalarBits(ncclFloat32, host.scalarBits), r.scalar);
  EXPECT_EQ(nullptr, r.scalarPtr);

  CollTask device = allReduce(ncclFloat16, kUserOp);
  device.scalarPtr = reinterpret_cast<const void*>(0x7f0000030000);
  r = resolveReduction(device, 4);
  EXPECT_EQ(DevRedOp::kPreMulSum, r.op);
  EXPECT_EQ(device.scalarPtr, r.scalarPtr);
}

TEST(ResolveReduction, CollectivesWithoutAnOpSum) {
  CollTask gather = allReduce(ncclFloat32, ncclSum);
  gather.coll = CollId::kAllGather;
  EXPECT_EQ(DevRedOp::kSum, resolveReduction(gather, 4).op);
  CollTask broadcast = allReduce(ncclInt32, ncclSum);
  broadcast.coll = CollId::kBroadcast;
  EXPECT_EQ(DevRedOp::kSum, resolveReduction(broadcast, 4).op);
}

TEST(DevAlgoOf, EveryPlannedAlgorithmHasItsKernel) {
  EXPECT_EQ(DevAlgo::kRing, devAlgoOf(plan::kAlgoRing));
  EXPECT_EQ(DevAlgo::kTree, devAlgoOf(plan::kAlgoTree));
  EXPECT_EQ(DevAlgo::kDirect, devAlgoOf(plan::kAlgoDirect));
  // Never planned: they would run as rings, as would a value outside the enum.
  EXPECT_EQ(DevAlgo::kRing, devAlgoOf(plan::kAlgoNvls));
  EXPECT_EQ(DevAlgo::kRing, devAlgoOf(plan::kAlgoPat));
  EXPECT_EQ(DevAlgo::kRing, devAlgoOf(static_cast<plan::AlgoId>(-1)));
  EXPECT_EQ(DevAlgo::kRing, devAlgoOf(static_cast<plan::AlgoId>(plan::kNumAlgos)));
}

// One rank: no connection, no planner; the plan says how the operation runs.
class OneRankPlan : public ::testing::Test {
 protected:
  OneRankPlan() {
    comm_.rank_ = 0;
    comm_.nranks_ = 1;
    ctx_.comm = &comm_;
  }
  ncclComm comm_;
  DataPathContext ctx_;
  CollectiveEngine engine_{ctx_};
};

TEST_F(OneRankPlan, EmptyIsNothingAndOthersACopy) {
  CollTask empty = allReduce(ncclFloat32, ncclSum);
  empty.count = 0;
  PlannedColl op;
  ASSERT_EQ(ncclSuccess, engine_.plan(empty, RegisteredLaunch{}, &op));
  EXPECT_EQ(PlannedColl::Path::kNothing, op.path);
  EXPECT_EQ(&empty, op.task);

  const CollTask avg = allReduce(ncclFloat32, ncclAvg);  // the average of one value is that value
  ASSERT_EQ(ncclSuccess, engine_.plan(avg, RegisteredLaunch{}, &op));
  EXPECT_EQ(PlannedColl::Path::kCopy, op.path);
  EXPECT_EQ(&avg, op.task);
}

TEST_F(OneRankPlan, UserOpRunsTheOneRankKernelWithItsWork) {
  CollTask task = allReduce(ncclFloat32, kUserOp);
  task.coll = CollId::kReduce;
  task.root = 0;
  const float scalar = -3.0f;
  std::memcpy(&task.scalarBits, &scalar, sizeof(scalar));
  PlannedColl op;
  ASSERT_EQ(ncclSuccess, engine_.plan(task, RegisteredLaunch{}, &op));
  ASSERT_EQ(PlannedColl::Path::kOneRankKernel, op.path);
  EXPECT_EQ(task.sendbuff, op.work.sendbuff);
  EXPECT_EQ(task.recvbuff, op.work.recvbuff);
  EXPECT_EQ(task.count, op.work.count);
  EXPECT_EQ(static_cast<uint8_t>(CollId::kReduce), op.work.coll);
  EXPECT_EQ(static_cast<uint8_t>(ncclFloat32), op.work.dtype);
  EXPECT_EQ(static_cast<uint8_t>(DevRedOp::kPreMulSum), op.work.redOp);
  EXPECT_EQ(preMulScalarBits(ncclFloat32, task.scalarBits), op.work.scalar);
  EXPECT_EQ(0u, op.work.seq);  // numbered only at launch
  EXPECT_EQ(nullptr, op.work.waitNotes);
}

}  // namespace
}  // namespace braid
