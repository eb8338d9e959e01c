// Device communicators on the CPU: the resource window's layout, the requirement builders, reading
// the requirements of every NCCL release (and refusing what Braid lacks), and writing ncclDevComm
// in each release's layout without touching a byte past it.
#include "api/dev_comm_abi.h"

#include <gtest/gtest.h>
#include <nccl.h>
#include <nccl_device/host.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/dev_comm_layouts.h"
#include "util/params.h"
#include "window/dev_resources.h"

namespace braid {
namespace {

using window::DevCommAsk;
using window::DevCommMade;
using window::ResourceAsk;

TEST(DevCommResources, BuffersStartAtMultiplesOf128AndTheirAlignment) {
  uint32_t h[4] = {99, 99, 99, 99};
  std::vector<ResourceAsk> asks = {{84, 4, &h[0], "a"}, {1, 0, &h[1], "b"}, {16, 1024, &h[2], "c"}, {0, 0, &h[3], "d"}};
  uint64_t total = 0;
  ASSERT_EQ(window::layOutResources(asks, &total), ncclSuccess);
  EXPECT_EQ(h[0], 0u);
  EXPECT_EQ(h[1], 1u);  // byte 128
  EXPECT_EQ(h[2], 8u);  // byte 1024: its own alignment
  EXPECT_EQ(h[3], 9u);  // byte 1040 rounded to 1152
  EXPECT_EQ(total, 1152u);
}

TEST(DevCommResources, BadAlignmentAndHugeTotalsAreRefused) {
  uint64_t total = 0;
  std::vector<ResourceAsk> odd = {{16, 48, nullptr, "odd"}};
  EXPECT_EQ(window::layOutResources(odd, &total), ncclInvalidArgument);
  std::vector<ResourceAsk> huge = {{window::kMaxResourceBytes, 0, nullptr, "a"}, {1, 0, nullptr, "b"}};
  EXPECT_EQ(window::layOutResources(huge, &total), ncclInvalidArgument);
  std::vector<ResourceAsk> wraps = {{~uint64_t{0} - 64, 0, nullptr, "wraps"}};
  EXPECT_EQ(window::layOutResources(wraps, &total), ncclInvalidArgument);
}

TEST(DevCommBuilders, LsaBarrierAndLla2aMemoryIsNccls) {
  ncclLsaBarrierHandle_t bar;
  ncclDevResourceRequirements_t req;
  std::memset(&req, 0x5a, sizeof(req));
  ASSERT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{4, 1, 1}, 3, &bar, &req), ncclSuccess);
  EXPECT_EQ(req.bufferSize, (3u * 3 + 3 * 4) * 4);
  EXPECT_EQ(req.bufferAlign, 4u);
  EXPECT_EQ(req.outBufferHandle, &bar.bufHandle);
  EXPECT_EQ(req.next, nullptr);
  EXPECT_EQ(req.ginSignalCount, 0);
  EXPECT_EQ(bar.nBarriers, 3);
  ncclLLA2AHandle_t lla;
  ASSERT_EQ(ncclLLA2ACreateRequirement(2, 5, &lla, &req), ncclSuccess);
  EXPECT_EQ(req.bufferSize, 2u * (1 + 2 * 5) * 16);
  EXPECT_EQ(req.bufferAlign, 16u);
  EXPECT_EQ(req.outBufferHandle, &lla.bufHandle);
  EXPECT_EQ(lla.nSlots, 5u);
  EXPECT_EQ(ncclLLA2ACalcSlots(7, 12), 14);
}

TEST(DevCommBuilders, BadArgumentsAreRefused) {
  ncclLsaBarrierHandle_t bar;
  ncclLLA2AHandle_t lla;
  ncclDevResourceRequirements_t req;
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{4, 0, 1}, 1, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{4, 0, 1}, 1, &bar, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{4, 0, 1}, -1, &bar, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{0, 0, 1}, 1, &bar, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLLA2ACreateRequirement(-1, 4, &lla, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLLA2ACreateRequirement(1, 4, nullptr, &req), ncclInvalidArgument);
  // Sizes that would wrap 64 bits are refused, not wrapped into small buffers.
  EXPECT_EQ(ncclLLA2ACreateRequirement(0x7fffffff, 0x7fffffff, &lla, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{0x7fffffff, 0, 1}, 0x7fffffff, &bar, &req), ncclInvalidArgument);
  EXPECT_GT(window::lla2aBytes(0x7fffffff, 0x7fffffff), window::kMaxResourceBytes);
  EXPECT_GT(window::lsaBarrierBytes(0x7fffffff, 0x7fffffff), window::kMaxResourceBytes);
}

// ---- Reading requirements ----

template <typename R>
R headed(unsigned version) {
  R r;
  std::memset(&r, 0, sizeof(r));
  r.size = sizeof(R);
  r.magic = NCCL_API_MAGIC;
  r.version = version;
  return r;
}

ncclResult_t readReqs(const void* reqs, DevCommLayout* layout, DevCommAsk* ask, int nranks = 4, int lsaSize = 4) {
  return readDevCommRequirements(reqs, nranks, lsaSize, layout, ask);
}

TEST(DevCommRequirements, EveryReleaseIsToldByItsHeader) {
  DevCommLayout layout;
  DevCommAsk ask;
  DevCommRequirementsV22809 r28;
  std::memset(&r28, 0, sizeof(r28));
  r28.lsaBarrierCount = 5;
  ASSERT_EQ(readReqs(&r28, &layout, &ask), ncclSuccess);
  EXPECT_EQ(layout.release, DevCommRelease::k22809);
  EXPECT_EQ(ask.lsaBarriers, 5);

  auto r292 = headed<DevCommRequirementsV22902>(22902);
  r292.lsaBarrierCount = 6;
  ASSERT_EQ(readReqs(&r292, &layout, &ask), ncclSuccess);
  EXPECT_EQ(layout.release, DevCommRelease::k22902);
  EXPECT_EQ(ask.lsaBarriers, 6);
  auto r297 = headed<DevCommRequirementsV22907>(22907);
  ASSERT_EQ(readReqs(&r297, &layout, &ask), ncclSuccess);
  EXPECT_EQ(layout.release, DevCommRelease::k22907);
  auto r307 = headed<DevCommRequirementsV23007>(23007);
  ASSERT_EQ(readReqs(&r307, &layout, &ask), ncclSuccess);
  EXPECT_EQ(layout.release, DevCommRelease::k23007);
  EXPECT_EQ(layout.version, 23007u);
  auto r312 = headed<ncclDevCommRequirements_t>(23102);
  ASSERT_EQ(readReqs(&r312, &layout, &ask), ncclSuccess);
  EXPECT_EQ(layout.release, DevCommRelease::k23203);
  ncclDevCommRequirements_t own = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  own.lsaBarrierCount = 7;
  ASSERT_EQ(readReqs(&own, &layout, &ask), ncclSuccess);
  EXPECT_EQ(layout.release, DevCommRelease::k23203);
  EXPECT_EQ(ask.lsaBarriers, 7);
}

TEST(DevCommRequirements, UnknownReleasesAndShortStructuresAreRefused) {
  DevCommLayout layout;
  DevCommAsk ask;
  auto newer = headed<ncclDevCommRequirements_t>(23300);
  EXPECT_EQ(readReqs(&newer, &layout, &ask), ncclInvalidUsage);
  auto older = headed<ncclDevCommRequirements_t>(22700);
  EXPECT_EQ(readReqs(&older, &layout, &ask), ncclInvalidUsage);
  auto shortOne = headed<DevCommRequirementsV23007>(23007);
  shortOne.size = 64;
  EXPECT_EQ(readReqs(&shortOne, &layout, &ask), ncclInvalidUsage);
}

TEST(DevCommRequirements, WhatBraidLacksIsRefusedByName) {
  DevCommLayout layout;
  DevCommAsk ask;
  auto fresh = [] { return ncclDevCommRequirements_t(NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER); };
  ncclDevCommRequirements_t r = fresh();
  r.lsaMultimem = true;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidUsage);
  r = fresh();
  r.ginType = NCCL_GIN_TYPE_GDAKI;  // GIN transports other than the proxy
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidUsage);
  r = fresh();
  r.ginConnectionType = NCCL_GIN_CONNECTION_CUSTOM_STRIDE;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidUsage);
  r = fresh();
  r.cftBarrierCount = 1;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidUsage);
  r = fresh();
  ncclTeamRequirements_t team{};
  team.multimem = true;
  r.teamRequirementsList = &team;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidUsage);
}

// Hybrid barriers: within one LSA team their LSA part is all they need; across LSA teams they turn
// GIN on (for programs of a release whose GIN Braid serves) and get its rail and dense sets.
TEST(DevCommRequirements, HybridBarriersAcrossLsaTeamsTakeGin) {
  DevCommLayout layout;
  DevCommAsk ask;
  ncclDevCommRequirements_t r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  r.barrierCount = 2;
  ASSERT_EQ(readReqs(&r, &layout, &ask, 4, 4), ncclSuccess);
  EXPECT_EQ(ask.hybridBarriers, 2);
  EXPECT_FALSE(ask.gin);
  ask = DevCommAsk{};
  ASSERT_EQ(readReqs(&r, &layout, &ask, 8, 4), ncclSuccess);
  EXPECT_EQ(ask.hybridBarriers, 2);
  EXPECT_TRUE(ask.gin);
  EXPECT_EQ(ask.hybridGinBarriers, 2);
  auto r307 = headed<DevCommRequirementsV23007>(23007);
  r307.barrierCount = 1;
  ask = DevCommAsk{};
  EXPECT_EQ(readReqs(&r307, &layout, &ask, 4, 4), ncclSuccess);
  EXPECT_EQ(readReqs(&r307, &layout, &ask, 8, 4), ncclInvalidUsage);  // GIN for a 2.30 program
}

// GIN (the proxy transport) for programs built against 2.32: what they ask for, in the ask; the
// same from a program of an earlier release is refused by name.
TEST(DevCommRequirements, GinIsReadForTwoThirtyTwoAndRefusedBefore) {
  DevCommLayout layout;
  DevCommAsk ask;
  ncclDevCommRequirements_t r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  r.ginSignalCount = 2;
  r.ginCounterCount = 3;
  r.worldGinBarrierCount = 1;
  r.railGinBarrierCount = 4;
  r.ginQueueDepth = 100;
  ncclDevResourceRequirements_t res{};
  uint32_t signalStart = 0;
  res.ginSignalCount = 5;
  res.outGinSignalStart = &signalStart;
  r.resourceRequirementsList = &res;
  ASSERT_EQ(readReqs(&r, &layout, &ask, 8, 4), ncclSuccess);
  EXPECT_TRUE(ask.gin);
  EXPECT_EQ(ask.ginContexts, 4);  // NCCL's default hint
  EXPECT_EQ(ask.ginSignals, 2);
  EXPECT_EQ(ask.ginCounters, 3);
  EXPECT_EQ(ask.worldGinBarriers, 1);
  EXPECT_EQ(ask.railGinBarriers, 4);
  EXPECT_EQ(ask.queueDepth, 100);
  ASSERT_EQ(ask.ginSignalAsks.size(), 1u);
  EXPECT_EQ(ask.ginSignalAsks[0].count, 5);
  EXPECT_EQ(ask.ginSignalAsks[0].outStart, &signalStart);
  // Rail GIN barriers on a rail of one rank need no GIN (PyTorch asks for them there).
  r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  r.railGinBarrierCount = 4;
  ask = DevCommAsk{};
  ASSERT_EQ(readReqs(&r, &layout, &ask, 4, 4), ncclSuccess);
  EXPECT_FALSE(ask.gin);
  ask = DevCommAsk{};
  ASSERT_EQ(readReqs(&r, &layout, &ask, 8, 4), ncclSuccess);
  EXPECT_TRUE(ask.gin);

  auto r312 = headed<ncclDevCommRequirements_t>(23102);
  r312.ginSignalCount = 1;
  ask = DevCommAsk{};
  EXPECT_EQ(readReqs(&r312, &layout, &ask), ncclInvalidUsage);
  auto r307 = headed<DevCommRequirementsV23007>(23007);
  r307.worldGinBarrierCount = 1;
  EXPECT_EQ(readReqs(&r307, &layout, &ask), ncclInvalidUsage);
  r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  r.ginSignalCount = -1;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidArgument);
  // NCCL_GIN_ENABLE=0 turns GIN off; what needs no GIN still works.
  setenv("NCCL_GIN_ENABLE", "0", 1);
  paramsReset();
  r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  r.ginSignalCount = 1;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidUsage);
  r.ginSignalCount = 0;
  r.lsaBarrierCount = 1;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclSuccess);
  unsetenv("NCCL_GIN_ENABLE");
  paramsReset();
  r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  res = ncclDevResourceRequirements_t{};
  res.ginCounterCount = -2;
  r.resourceRequirementsList = &res;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidArgument);
}

TEST(DevCommRequirements, BadCountsAndLoopingListsAreInvalidArguments) {
  DevCommLayout layout;
  DevCommAsk ask;
  ncclDevCommRequirements_t r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  r.lsaBarrierCount = -1;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidArgument);
  r.lsaBarrierCount = 0;
  ncclDevResourceRequirements_t loop{};
  loop.next = &loop;
  r.resourceRequirementsList = &loop;
  EXPECT_EQ(readReqs(&r, &layout, &ask), ncclInvalidArgument);
}

TEST(DevCommRequirements, TheProgramsBuffersKeepTheirOrderAndHandles) {
  DevCommLayout layout;
  DevCommAsk ask;
  ncclDevCommRequirements_t r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  ncclLsaBarrierHandle_t bar;
  ncclLLA2AHandle_t lla;
  ncclDevResourceRequirements_t barReq, llaReq;
  ASSERT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{4, 0, 1}, 2, &bar, &barReq), ncclSuccess);
  ASSERT_EQ(ncclLLA2ACreateRequirement(3, 4, &lla, &llaReq), ncclSuccess);
  barReq.next = &llaReq;
  r.resourceRequirementsList = &barReq;
  ASSERT_EQ(readReqs(&r, &layout, &ask), ncclSuccess);
  ASSERT_EQ(ask.resources.size(), 2u);
  EXPECT_EQ(ask.resources[0].bytes, barReq.bufferSize);
  EXPECT_EQ(ask.resources[0].outHandle, &bar.bufHandle);
  EXPECT_EQ(ask.resources[1].align, 16u);
  EXPECT_EQ(ask.resources[1].outHandle, &lla.bufHandle);
}

// ---- Writing ncclDevComm ----

DevCommMade sampleMade() {
  DevCommMade m;
  m.rank = 5;
  m.nranks = 8;
  m.lsaRank = 1;
  m.lsaSize = 4;
  m.windowTable = reinterpret_cast<void*>(0x7000);
  m.resourceWindow = reinterpret_cast<ncclWindow_t>(0x8000);
  m.resourceDesc.winHost = reinterpret_cast<void*>(0x9000);
  m.resourceDesc.lsaFlatBase = reinterpret_cast<char*>(0x10000000000ull);
  m.resourceDesc.lsaRank = 1;
  m.resourceDesc.worldRank = 5;
  m.resourceDesc.stride4G = 2;
  m.lsaBarrier = window::BarrierSet{3, 16};
  m.hybridLsaBarrier = window::BarrierSet{9, 4};
  m.abortFlag = reinterpret_cast<uint32_t*>(0xa000);
  return m;
}

// Writes into a poisoned buffer and checks that nothing past `size` bytes changed.
template <typename D>
D writeAndCheckBounds(DevCommLayout layout, const DevCommMade& m) {
  unsigned char buf[512];
  std::memset(buf, 0xee, sizeof(buf));
  writeDevComm(layout, m, buf);
  for (size_t i = sizeof(D); i < sizeof(buf); ++i) EXPECT_EQ(buf[i], 0xee) << "byte " << i << " past the layout";
  D d;
  std::memcpy(&d, buf, sizeof(D));
  EXPECT_EQ(resourceWindowOf(buf), m.resourceWindow);
  return d;
}

template <typename D>
void expectCommon(const D& d, const DevCommMade& m) {
  EXPECT_EQ(d.rank, 5);
  EXPECT_EQ(d.nRanks, 8);
  EXPECT_EQ(d.nRanks_rcp32, 0xffffffffu / 8 + 1);
  EXPECT_EQ(d.lsaRank, 1);
  EXPECT_EQ(d.lsaSize, 4);
  EXPECT_EQ(static_cast<const void*>(d.windowTable), m.windowTable);
  EXPECT_EQ(d.lsaMultimem.mcBasePtr, nullptr);
  EXPECT_EQ(d.lsaBarrier.bufHandle, 3u);
  EXPECT_EQ(d.lsaBarrier.nBarriers, 16);
}

TEST(DevCommWrite, EachReleaseGetsItsOwnLayout) {
  const DevCommMade m = sampleMade();
  auto d28 = writeAndCheckBounds<DevCommV22809>(DevCommLayout{DevCommRelease::k22809, 0}, m);
  expectCommon(d28, m);
  EXPECT_EQ(d28.resourceWindow_inlined.winHost, m.resourceDesc.winHost);
  EXPECT_EQ(d28.resourceWindow_inlined.lsaFlatBase, m.resourceDesc.lsaFlatBase);
  EXPECT_EQ(d28.resourceWindow_inlined.stride4G, 2u);
  EXPECT_EQ(d28.resourceWindow_inlined.worldRank, 5);
  EXPECT_EQ(d28.ginContextCount, 0);

  auto d297 = writeAndCheckBounds<DevCommV22907>(DevCommLayout{DevCommRelease::k22907, 22907}, m);
  expectCommon(d297, m);
  EXPECT_EQ(d297.abortFlag, m.abortFlag);

  auto d30 = writeAndCheckBounds<DevCommV23007>(DevCommLayout{DevCommRelease::k23007, 23007}, m);
  expectCommon(d30, m);
  EXPECT_EQ(d30.magic, NCCL_API_MAGIC);
  EXPECT_EQ(d30.version, 23007u);
  EXPECT_EQ(d30.resourceWindow_inlined.lsaFlatBase, m.resourceDesc.lsaFlatBase);
  EXPECT_EQ(d30.resourceWindow_inlined.stride4G, 2u);
  EXPECT_EQ(d30.hybridLsaBarrier.bufHandle, 9u);
  EXPECT_EQ(d30.abortFlag, m.abortFlag);

  auto d32 = writeAndCheckBounds<ncclDevComm>(DevCommLayout{DevCommRelease::k23203, 23203}, m);
  expectCommon(d32, m);
  EXPECT_EQ(d32.magic, NCCL_API_MAGIC);
  EXPECT_EQ(d32.resourceWindow_inlined.lsaFlatBase, m.resourceDesc.lsaFlatBase);
  EXPECT_EQ(d32.hybridLsaBarrier.nBarriers, 4);
  EXPECT_EQ(d32.abortFlag, m.abortFlag);
  EXPECT_EQ(d32.ginConnectionCount, 0);
  EXPECT_EQ(d32.ucLeId, NCCL_LE_ID_INVALID);
}

}  // namespace
}  // namespace braid
