// The structures of NCCL's device API that a host fills and device code compiled elsewhere reads:
// ncclDevComm, ncclDevCommRequirements, ncclWindow_vidmem, ncclTeam, the barrier and LL all-to-all
// handles, the resource and team requirements. For each NCCL release from 2.28.9 to 2.32.3:
//   - Braid's structures (include/nccl_device/*.h for 2.32.3, src/core/dev_comm_layouts.h before)
//     have the offsets and sizes recorded below from NVIDIA's headers; always checked;
//   - NVIDIA's headers of the release, where CMake found them when it configured this build
//     (tests/unit/CMakeLists.txt: BRAID_NVIDIA_NCCL_RELEASES_DIR, or what the abi fetch fixtures
//     unpacked), have the same; otherwise that test is skipped and says how to get them.
// docs/device-api.md explains the differences between releases that the record shows.
#include "device_api_layout.h"

#include <gtest/gtest.h>
#include <nccl.h>
#include <nccl_device.h>
#include <stddef.h>

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/dev_comm_layouts.h"

// A few of NCCL 2.32.3's offsets that kernels compiled against NVIDIA's header read, so that a
// change to Braid's header fails to compile before any test runs.
static_assert(sizeof(ncclDevComm) == 248, "ncclDevComm is 248 bytes in NCCL 2.32.3");
static_assert(offsetof(ncclDevComm, resourceWindow_inlined) == 48, "ncclDevComm.resourceWindow_inlined");
static_assert(offsetof(ncclDevComm, lsaMultimem) == 72, "ncclDevComm.lsaMultimem");
static_assert(offsetof(ncclDevComm, lsaBarrier) == 80, "ncclDevComm.lsaBarrier");
static_assert(offsetof(ncclDevComm, abortFlag) == 168, "ncclDevComm.abortFlag");
static_assert(offsetof(ncclDevComm, hybridLsaBarrier) == 176, "ncclDevComm.hybridLsaBarrier");
static_assert(sizeof(ncclWindow_vidmem) == 96, "ncclWindow_vidmem is 96 bytes in NCCL 2.32.3");
static_assert(offsetof(ncclWindow_vidmem, lsaFlatBase) == 8 && offsetof(ncclWindow_vidmem, stride4G) == 24,
              "ncclWindow_vidmem addressing fields");
static_assert(sizeof(ncclDevCommRequirements) == 120, "ncclDevCommRequirements is 120 bytes in NCCL 2.32.3");

namespace {

// Braid's type for each structure label of each release.
struct BraidCommonTypes {
  using ncclTeam = ::ncclTeam;
  using ncclMultimemHandle = ::ncclMultimemHandle;
  using ncclLsaBarrierHandle = ::ncclLsaBarrierHandle;
  using ncclLLA2AHandle = ::ncclLLA2AHandle;
  using ncclGinBarrierHandle = ::ncclGinBarrierHandle;
  using ncclDevResourceRequirements = ::ncclDevResourceRequirements;
  using ncclTeamRequirements = ::ncclTeamRequirements;
};
template <int code>
struct BraidTypes;
template <>
struct BraidTypes<22809> : BraidCommonTypes {
  using ncclWindow_vidmem = braid::WindowV22809;
  using ncclDevComm = braid::DevCommV22809;
  using ncclDevCommRequirements = braid::DevCommRequirementsV22809;
};
template <>
struct BraidTypes<22902> : BraidCommonTypes {
  using ncclWindow_vidmem = braid::WindowV22809;
  using ncclDevComm = braid::DevCommV22902;
  using ncclDevCommRequirements = braid::DevCommRequirementsV22902;
};
template <>
struct BraidTypes<22907> : BraidCommonTypes {
  using ncclWindow_vidmem = braid::WindowV22809;
  using ncclDevComm = braid::DevCommV22907;
  using ncclDevCommRequirements = braid::DevCommRequirementsV22907;
};
template <>
struct BraidTypes<23007> : BraidCommonTypes {
  using ncclWindow_vidmem = braid::WindowV23007;
  using ncclResourceWindow_vidmem = braid::ResourceWindowV23007;
  using ncclDevComm = braid::DevCommV23007;
  using ncclDevCommRequirements = braid::DevCommRequirementsV23007;
};
template <>
struct BraidTypes<23203> : BraidCommonTypes {
  using ncclCftBarrierHandle = ::ncclCftBarrierHandle;
  using ncclWindow_vidmem = ::ncclWindow_vidmem;
  using ncclResourceWindow_vidmem = ::ncclResourceWindow_vidmem;
  using ncclDevComm = ::ncclDevComm;
  using ncclDevCommRequirements = ::ncclDevCommRequirements;
};

#define BRAID_FIELD(field) facts.push_back(DEVAPI_FACT_FIELD(T, label, field));
#define BRAID_STRUCT(type, FIELDS)                                    \
  {                                                                   \
    using T = Types::type;                                            \
    const char* label = #type;                                        \
    facts.push_back(DevApiLayoutFact{label, "sizeof", 0, sizeof(T)}); \
    FIELDS(BRAID_FIELD)                                               \
  }
#define BRAID_FACTS(code)                              \
  std::vector<DevApiLayoutFact> braidFacts##code() {   \
    using Types = BraidTypes<code>;                    \
    std::vector<DevApiLayoutFact> facts;               \
    DEVAPI_STRUCTS_V##code(BRAID_STRUCT) return facts; \
  }
DEVAPI_RELEASES(BRAID_FACTS)

// ---- The record: offsets and sizes as NVIDIA's headers of each release have them ----
struct RecordedStruct {
  int code;
  const char* type;
  size_t size;
  const char* fields;  // "field@offset:size ..."
};
#include "device_api_layout_record.inc"

// "type.field" -> "offset:size" (the size of the structure under "type.sizeof").
using FactMap = std::map<std::string, std::string>;

FactMap factMap(const std::vector<DevApiLayoutFact>& facts) {
  FactMap map;
  for (const DevApiLayoutFact& f : facts) {
    map[std::string(f.type) + "." + f.field] = std::to_string(f.offset) + ":" + std::to_string(f.size);
  }
  return map;
}

FactMap recordedMap(int code) {
  FactMap map;
  for (const RecordedStruct& r : kRecorded) {
    if (r.code != code) continue;
    map[std::string(r.type) + ".sizeof"] = "0:" + std::to_string(r.size);
    std::istringstream fields(r.fields);
    std::string item;
    while (fields >> item) {
      size_t at = item.find('@');
      map[std::string(r.type) + "." + item.substr(0, at)] = item.substr(at + 1);
    }
  }
  return map;
}

// Every fact of `expected` present in `actual` with the same value, and nothing more.
void expectSameFacts(const FactMap& expected, const FactMap& actual, const std::string& what) {
  ASSERT_FALSE(expected.empty()) << what << ": nothing recorded";
  for (const auto& [key, value] : expected) {
    auto it = actual.find(key);
    if (it == actual.end()) {
      ADD_FAILURE() << what << ": " << key << " is missing (recorded offset:size " << value << ")";
    } else {
      EXPECT_EQ(value, it->second) << what << ": " << key << " (offset:size)";
    }
  }
  for (const auto& [key, value] : actual) {
    EXPECT_TRUE(expected.count(key)) << what << ": " << key << " (" << value << ") is not in the record";
  }
}

std::string releaseName(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

TEST(DeviceApiLayout, BraidHeaderHasNccl2323Layouts) {
  expectSameFacts(recordedMap(23203), factMap(braidFacts23203()), "Braid's nccl_device.h vs NCCL 2.32.3");
}

TEST(DeviceApiLayout, EarlierReleasesMatchTheirRecord) {
  const std::pair<int, std::vector<DevApiLayoutFact>> releases[] = {
      {22809, braidFacts22809()}, {22902, braidFacts22902()}, {22907, braidFacts22907()}, {23007, braidFacts23007()}};
  for (const auto& [code, facts] : releases) {
    expectSameFacts(recordedMap(code), factMap(facts), "dev_comm_layouts.h vs NCCL " + releaseName(code));
  }
}

// One window descriptor serves kernels of every release: they all read the addressing fields at
// the same offsets, and the fields Braid's 2.32.3 descriptor adds sit where older releases had
// padding (winFlags) or their own GIN fields, which a window without GIN leaves zero.
TEST(DeviceApiLayout, OneWindowDescriptorServesEveryRelease) {
  FactMap ours = recordedMap(23203);
  const char* shared[] = {"winHost", "lsaFlatBase", "lsaRank", "worldRank", "stride4G", "mcOffset4K", "ginOffset4K"};
  for (int code : {22809, 22902, 22907, 23007}) {
    FactMap theirs = recordedMap(code);
    for (const char* field : shared) {
      std::string key = std::string("ncclWindow_vidmem.") + field;
      EXPECT_EQ(ours[key], theirs[key]) << key << " in NCCL " << releaseName(code);
    }
    EXPECT_EQ(ours["ncclWindow_vidmem.ginWinsDefaultBackend"], theirs["ncclWindow_vidmem.ginWins"]);
  }
  EXPECT_EQ("36:4", ours["ncclWindow_vidmem.winFlags"]);  // padding before ginWins (offset 40) earlier
}

// The part of ncclDevComm a kernel's LSA barrier reads moves between releases, so a host must write
// each release's own layout (docs/device-api.md).
TEST(DeviceApiLayout, LsaBarrierHandleMovesBetweenReleases) {
  EXPECT_EQ("120:8", recordedMap(22809)["ncclDevComm.lsaBarrier"]);
  EXPECT_EQ("120:8", recordedMap(22907)["ncclDevComm.lsaBarrier"]);
  EXPECT_EQ("128:8", recordedMap(23007)["ncclDevComm.lsaBarrier"]);
  EXPECT_EQ("80:8", recordedMap(23203)["ncclDevComm.lsaBarrier"]);
}

// NVIDIA's headers of one release against the record.
void checkNvidia(int code, std::vector<DevApiLayoutFact> (*nvidiaFacts)(), const char* includeDir) {
  if (nvidiaFacts == nullptr) {
    GTEST_SKIP() << "NVIDIA's NCCL " << releaseName(code)
                 << " headers were not found when this build was configured. Point "
                    "BRAID_NVIDIA_NCCL_RELEASES_DIR at a folder holding the unpacked wheel as "
                 << releaseName(code)
                 << "/nvidia/nccl/include (pip download --no-deps nvidia-nccl-cu13==" << releaseName(code)
                 << "; unzip), or run `ctest -L network` once, and re-run cmake.";
  }
  expectSameFacts(recordedMap(code), factMap(nvidiaFacts()),
                  "NVIDIA's " + releaseName(code) + " headers in " + includeDir + " vs the record");
}

#define NVIDIA_TEST(code)                               \
  TEST(DeviceApiLayout, NvidiaHeaders##code) {          \
    std::vector<DevApiLayoutFact> (*facts)() = nullptr; \
    const char* dir = "";                               \
    NVIDIA_FACTS_##code checkNvidia(code, facts, dir);  \
  }
#ifdef DEVAPI_NVIDIA_22809
#define NVIDIA_FACTS_22809 facts = devApiNvidiaFacts22809, dir = DEVAPI_NVIDIA_22809;
#else
#define NVIDIA_FACTS_22809
#endif
#ifdef DEVAPI_NVIDIA_22902
#define NVIDIA_FACTS_22902 facts = devApiNvidiaFacts22902, dir = DEVAPI_NVIDIA_22902;
#else
#define NVIDIA_FACTS_22902
#endif
#ifdef DEVAPI_NVIDIA_22907
#define NVIDIA_FACTS_22907 facts = devApiNvidiaFacts22907, dir = DEVAPI_NVIDIA_22907;
#else
#define NVIDIA_FACTS_22907
#endif
#ifdef DEVAPI_NVIDIA_23007
#define NVIDIA_FACTS_23007 facts = devApiNvidiaFacts23007, dir = DEVAPI_NVIDIA_23007;
#else
#define NVIDIA_FACTS_23007
#endif
#ifdef DEVAPI_NVIDIA_23203
#define NVIDIA_FACTS_23203 facts = devApiNvidiaFacts23203, dir = DEVAPI_NVIDIA_23203;
#else
#define NVIDIA_FACTS_23203
#endif
DEVAPI_RELEASES(NVIDIA_TEST)

}  // namespace
