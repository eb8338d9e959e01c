// ncclRedOpCreatePreMulSum's op table (launch/red_ops.h): arguments checked, scalars kept as given,
// handles that only their own table accepts, destroyed ops refused, safe from many threads.
#include "launch/red_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace braid {
namespace {

TEST(UserRedOps, HostScalarIsCopiedAndDeviceScalarIsAPointer) {
  UserRedOps ops;
  float two = 2.5f;
  ncclRedOp_t a = ncclSum;
  ASSERT_EQ(ncclSuccess, ops.create(&two, ncclFloat32, ncclScalarHostImmediate, &a));
  two = 7.0f;  // read when created, not later
  EXPECT_GE(static_cast<int64_t>(a), static_cast<int64_t>(ncclNumOps));
  EXPECT_LT(static_cast<int64_t>(a), static_cast<int64_t>(ncclMaxRedOp));
  PreMulSumOp found;
  ASSERT_EQ(ncclSuccess, ops.find(a, ncclFloat32, "test", &found));
  uint32_t bits = 0;
  const float want = 2.5f;
  std::memcpy(&bits, &want, sizeof(bits));
  EXPECT_EQ(bits, found.valueBits);
  EXPECT_EQ(nullptr, found.devScalar);

  const void* devicePtr = reinterpret_cast<const void*>(0x7f0000001000);
  ncclRedOp_t b = ncclSum;
  ASSERT_EQ(ncclSuccess, ops.create(const_cast<void*>(devicePtr), ncclFloat16, ncclScalarDevice, &b));
  EXPECT_NE(a, b);
  ASSERT_EQ(ncclSuccess, ops.find(b, ncclFloat16, "test", &found));
  EXPECT_EQ(devicePtr, found.devScalar);

  int8_t minusTwo = -2;
  ncclRedOp_t c = ncclSum;
  ASSERT_EQ(ncclSuccess, ops.create(&minusTwo, ncclInt8, ncclScalarHostImmediate, &c));
  ASSERT_EQ(ncclSuccess, ops.find(c, ncclInt8, "test", &found));
  EXPECT_EQ(0xfeu, found.valueBits);  // one byte, nothing read past it
}

TEST(UserRedOps, BadArgumentsAreRefused) {
  UserRedOps ops;
  float s = 1.0f;
  ncclRedOp_t op = ncclSum;
  EXPECT_EQ(ncclInvalidArgument, ops.create(&s, ncclFloat32, ncclScalarHostImmediate, nullptr));
  EXPECT_EQ(ncclInvalidArgument, ops.create(nullptr, ncclFloat32, ncclScalarHostImmediate, &op));
  EXPECT_EQ(ncclInvalidArgument, ops.create(&s, static_cast<ncclDataType_t>(ncclNumTypes), ncclScalarDevice, &op));
  EXPECT_EQ(ncclInvalidArgument, ops.create(&s, ncclFloat32, static_cast<ncclScalarResidence_t>(7), &op));
  EXPECT_EQ(ncclSum, op);  // untouched by every refused call
}

TEST(UserRedOps, WrongDatatypeOtherTableBuiltInAndDestroyedOpsAreRefused) {
  UserRedOps mine;
  UserRedOps other;
  double s = 0.5;
  ncclRedOp_t op = ncclSum;
  ASSERT_EQ(ncclSuccess, mine.create(&s, ncclFloat64, ncclScalarHostImmediate, &op));
  PreMulSumOp found;
  EXPECT_EQ(ncclInvalidArgument, mine.find(op, ncclFloat32, "test", &found));
  EXPECT_EQ(ncclInvalidArgument, other.find(op, ncclFloat64, "test", &found));
  EXPECT_EQ(ncclInvalidArgument, other.destroy(op));
  for (ncclRedOp_t builtIn : {ncclSum, ncclAvg, ncclNumOps}) {
    EXPECT_EQ(ncclInvalidArgument, mine.destroy(builtIn));
    EXPECT_EQ(ncclInvalidArgument, mine.find(builtIn, ncclFloat64, "test", &found));
  }
  EXPECT_EQ(ncclSuccess, mine.find(op, ncclFloat64, "test", &found));
  EXPECT_EQ(ncclSuccess, mine.destroy(op));
  EXPECT_EQ(ncclInvalidArgument, mine.find(op, ncclFloat64, "test", &found));
  EXPECT_EQ(ncclInvalidArgument, mine.destroy(op));
}

TEST(UserRedOps, ManyThreadsGetDistinctLiveOps) {
  UserRedOps ops;
  constexpr int kThreads = 8;
  constexpr int kEach = 200;
  std::vector<std::vector<ncclRedOp_t>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&ops, &made, t] {
      for (int i = 0; i < kEach; i++) {
        int32_t s = t * kEach + i;
        ncclRedOp_t op = ncclSum;
        if (ops.create(&s, ncclInt32, ncclScalarHostImmediate, &op) != ncclSuccess) return;
        made[t].push_back(op);
        if (i % 2 == 1 && ops.destroy(op) != ncclSuccess) return;  // every other one goes again
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int> live;
  for (int t = 0; t < kThreads; t++) {
    ASSERT_EQ(static_cast<size_t>(kEach), made[t].size());
    for (int i = 0; i < kEach; i += 2) {
      PreMulSumOp found;
      ASSERT_EQ(ncclSuccess, ops.find(made[t][i], ncclInt32, "test", &found));
      EXPECT_EQ(static_cast<uint64_t>(t * kEach + i), found.valueBits);
      EXPECT_TRUE(live.insert(static_cast<int>(made[t][i])).second);
    }
  }
}

}  // namespace
}  // namespace braid
