// Link detection: NVML against recorded machines (a fake NVML table), without NVML at all, and on
// this machine.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "topo/nvml_api.h"
#include "topo/topo.h"
#include "topo_test_util.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::topo {
namespace {

using namespace test_helpers;  // NOLINT(google-build-using-namespace): this family's helpers

// ---- NVML detection against recorded machines --------------------------------------------------

struct FakeLink {
  int type;           // kNvmlNvlinkDeviceGpu or kNvmlNvlinkDeviceSwitch
  int64_t remoteBus;  // packed bus id of the far end
};

struct FakeGpu {
  int64_t busId;
  std::vector<FakeLink> links;
};

// One recorded machine; the fake NVML functions below read it.
struct FakeMachine {
  std::vector<FakeGpu> gpus;
  int ancestor = kNvmlTopologyMultiple;
  bool p2pOk = true;
  int noP2pGpu = -1;  // a GPU that can do P2P with nobody
};
FakeMachine* gFake = nullptr;

int fakeIndex(NvmlDevice dev) { return static_cast<int>(reinterpret_cast<uintptr_t>(dev)) - 1; }

NvmlReturn fakeInit() { return kNvmlSuccess; }
const char* fakeErrorString(NvmlReturn) { return "Not Found (fake)"; }
NvmlReturn fakeByBusId(const char* busId, NvmlDevice* dev) {
  int64_t id = busIdParse(busId);
  for (size_t g = 0; g < gFake->gpus.size(); ++g) {
    if (gFake->gpus[g].busId == id) {
      *dev = reinterpret_cast<NvmlDevice>(static_cast<uintptr_t>(g + 1));
      return kNvmlSuccess;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}
NvmlReturn fakeNvlinkState(NvmlDevice dev, unsigned link, int* active) {
  if (link >= gFake->gpus[fakeIndex(dev)].links.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = kNvmlFeatureEnabled;
  return kNvmlSuccess;
}
NvmlReturn fakeRemotePci(NvmlDevice dev, unsigned link, NvmlPciInfo* pci) {
  std::snprintf(pci->busId, sizeof(pci->busId), "0000%s",
                busIdText(gFake->gpus[fakeIndex(dev)].links[link].remoteBus).c_str());
  return kNvmlSuccess;
}
NvmlReturn fakeRemoteType(NvmlDevice dev, unsigned link, int* type) {
  *type = gFake->gpus[fakeIndex(dev)].links[link].type;
  return kNvmlSuccess;
}
NvmlReturn fakeP2p(NvmlDevice a, NvmlDevice b, int caps, int* status) {
  bool ok = gFake->p2pOk && fakeIndex(a) != gFake->noP2pGpu && fakeIndex(b) != gFake->noP2pGpu;
  *status = ok ? kNvmlP2pStatusOk : 5;  // NVML_P2P_STATUS_NOT_SUPPORTED
  return kNvmlSuccess;
}
NvmlReturn fakeAncestor(NvmlDevice, NvmlDevice, int* level) {
  *level = gFake->ancestor;
  return kNvmlSuccess;
}

NvmlApi fakeApi(bool withRemoteType) {
  return NvmlApi{
      fakeInit, fakeErrorString, fakeByBusId, fakeNvlinkState, fakeRemotePci, withRemoteType ? fakeRemoteType : nullptr,
      fakeP2p,  fakeAncestor,    nullptr,     nullptr};
}

class NvmlDetectTest : public TopoTest {
 protected:
  void SetUp() override {
    TopoTest::SetUp();
    gFake = &machine_;
  }
  void TearDown() override {
    gFake = nullptr;
    TopoTest::TearDown();
  }
  // GPUs at the bus ids of sameHostRanks(n).
  void addGpus(int n) {
    for (const RankPlace& r : sameHostRanks(n)) machine_.gpus.push_back(FakeGpu{r.busId, {}});
  }
  FakeMachine machine_;
};

TEST_F(NvmlDetectTest, NvSwitchMachine) {
  addGpus(4);
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 18; ++l) machine_.gpus[g].links.push_back(FakeLink{kNvmlNvlinkDeviceSwitch, 0xc0000 + l});
  }
  std::vector<RankPlace> ranks = sameHostRanks(4);
  for (bool withType : {true, false}) {
    NvmlApi api = fakeApi(withType);  // without the type call, unknown bus ids are switches
    std::vector<Link> row;
    ASSERT_EQ(detectLinksWith(&api, ranks, 2, &row), ncclSuccess);
    ASSERT_EQ(row.size(), 4u);
    EXPECT_EQ(row[2].path, PathType::kLoc);
    for (int j : {0, 1, 3}) {
      EXPECT_EQ(row[j].path, PathType::kNvl) << j;
      EXPECT_EQ(row[j].nvlinks, 18) << j;
      EXPECT_TRUE(row[j].switched) << j;
      EXPECT_TRUE(row[j].p2pOk) << j;
    }
  }
}

TEST_F(NvmlDetectTest, DirectNvlinkAndPcie) {
  addGpus(3);
  // GPU0 <-> GPU1: 4 direct lanes; GPU2 only on PCIe (PXB), and NVML denies it P2P.
  for (int l = 0; l < 4; ++l) {
    machine_.gpus[0].links.push_back(FakeLink{kNvmlNvlinkDeviceGpu, machine_.gpus[1].busId});
    machine_.gpus[1].links.push_back(FakeLink{kNvmlNvlinkDeviceGpu, machine_.gpus[0].busId});
  }
  machine_.noP2pGpu = 2;
  std::vector<RankPlace> ranks = sameHostRanks(3);
  ranks.push_back(RankPlace{3, 0, 0x07000, 0x5678, 0x1});  // another host
  for (bool withType : {true, false}) {
    NvmlApi api = fakeApi(withType);
    std::vector<Link> row;
    ASSERT_EQ(detectLinksWith(&api, ranks, 0, &row), ncclSuccess);
    EXPECT_EQ(row[1].path, PathType::kNvl);
    EXPECT_EQ(row[1].nvlinks, 4);
    EXPECT_FALSE(row[1].switched);
    EXPECT_TRUE(row[1].p2pOk);
    EXPECT_EQ(row[2].path, PathType::kPxb);
    EXPECT_EQ(row[2].nvlinks, 0);
    EXPECT_FALSE(row[2].p2pOk);
    EXPECT_EQ(row[3].path, PathType::kNet);
  }
  machine_.ancestor = kNvmlTopologySystem;
  NvmlApi api = fakeApi(true);
  std::vector<Link> row;
  ASSERT_EQ(detectLinksWith(&api, ranks, 2, &row), ncclSuccess);
  EXPECT_EQ(row[0].path, PathType::kSys);
  EXPECT_EQ(row[1].path, PathType::kSys);
}

TEST_F(NvmlDetectTest, UnknownGpusFallBackToShm) {
  addGpus(2);
  std::vector<RankPlace> ranks = sameHostRanks(3);  // rank 2's GPU is not in NVML
  NvmlApi api = fakeApi(true);
  std::vector<Link> row;
  ASSERT_EQ(detectLinksWith(&api, ranks, 0, &row), ncclSuccess);
  EXPECT_EQ(row[1].path, PathType::kPxb);
  EXPECT_TRUE(row[1].p2pOk);
  EXPECT_EQ(row[2].path, PathType::kPhb);
  EXPECT_FALSE(row[2].p2pOk);
  ASSERT_EQ(detectLinksWith(&api, ranks, 2, &row), ncclSuccess);  // own GPU unknown: every pair
  EXPECT_EQ(row[0].path, PathType::kPhb);
  EXPECT_FALSE(row[0].p2pOk);
  EXPECT_EQ(row[2].path, PathType::kLoc);
}

TEST_F(TopoTest, DetectWithoutNvml) {
  std::string log = logToFile("INFO", "INIT");
  std::vector<RankPlace> ranks = sameHostRanks(3);
  ranks[2].hostHash = 0x4321;
  std::vector<Link> row;
  ASSERT_EQ(detectLinksWith(nullptr, ranks, 1, &row), ncclSuccess);
  ASSERT_EQ(row.size(), 3u);
  EXPECT_EQ(row[0].path, PathType::kPhb);
  EXPECT_FALSE(row[0].p2pOk);
  EXPECT_EQ(row[1].path, PathType::kLoc);
  EXPECT_EQ(row[2].path, PathType::kNet);
  logReset();
  EXPECT_TRUE(contains(readFile(log), "NVML unavailable")) << readFile(log);

  NvmlApi api;
  EXPECT_FALSE(nvmlLoad("libbraid-no-such-nvml.so.1", &api));
  EXPECT_EQ(detectLinksWith(nullptr, ranks, 3, &row), ncclInvalidArgument);
  EXPECT_EQ(detectLinksWith(nullptr, ranks, 0, nullptr), ncclInvalidArgument);
}

// The real entry point, whatever this machine has: bus ids that exist nowhere fall back to SHM.
TEST_F(TopoTest, DetectLinksOnThisMachine) {
  std::vector<RankPlace> ranks = sameHostRanks(2);
  for (RankPlace& r : ranks) r.busId |= int64_t{0xabcd} << 20;  // PCI domain abcd: not a real GPU
  std::vector<Link> row;
  ASSERT_EQ(detectLinks(ranks, 0, &row), ncclSuccess);
  EXPECT_EQ(row[0].path, PathType::kLoc);
  EXPECT_EQ(row[1].path, PathType::kPhb);
  EXPECT_FALSE(row[1].p2pOk);
  EXPECT_EQ(busIdText(ranks[1].busId), "abcd:17:00.0");
  EXPECT_EQ(busIdParse("00000000:07:00.0"), 0x07000);
  EXPECT_EQ(busIdParse("bogus"), -1);
}

}  // namespace
}  // namespace braid::topo
