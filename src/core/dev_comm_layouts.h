// The device communicator and requirement structures of the NCCL releases before 2.32, as their
// kernels and programs lay them out. Braid's public header (include/nccl_device/comm.h, host.h) has
// NCCL 2.32.3's; a program built against an earlier NVIDIA header passes requirements in its own
// layout (told by their `version`, 2.29 and later) and compiles kernels that read ncclDevComm in its
// own layout, so a host that serves such programs fills one of these instead. Window descriptors
// need no per-release copy: every release reads the same first fields (docs/device-api.md).
//
// tests/unit/device_api_layout_test.cc checks every offset here against NVIDIA's headers.
#pragma once

#include <nccl.h>
#include <nccl_device/host.h>

#include <cstddef>
#include <cstdint>

namespace braid {

// A window's device descriptor before 2.30: the fields every release shares, then one GIN window
// per context. 2.28 and 2.29 embed this whole structure in ncclDevComm (resourceWindow_inlined).
struct WindowV22809 {
  void* winHost;
  char* lsaFlatBase;
  int lsaRank;
  int worldRank;
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  void* ginWins[4];
};
static_assert(sizeof(WindowV22809) == 72, "NCCL 2.28-2.29 ncclWindow_vidmem is 72 bytes");

// 2.30's window descriptor: 2.28's, then multi-segment GIN windows.
struct WindowV23007 {
  void* winHost;
  char* lsaFlatBase;
  int lsaRank;
  int worldRank;
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  void* ginWins[4];
  struct ncclSegmentWindow* ginMultiSegmentWins;
  int numSegments;
};
static_assert(sizeof(WindowV23007) == 88, "NCCL 2.30 ncclWindow_vidmem is 88 bytes");

// 2.30's inlined resource window: the addressing fields at their ncclWindow_vidmem offsets.
struct ResourceWindowV23007 {
  char reserved1[8];
  char* lsaFlatBase;
  char reserved2[8];
  uint32_t stride4G;
  uint32_t mcOffset4K;
  char reserved3[32];
};
static_assert(sizeof(ResourceWindowV23007) == 64, "NCCL 2.30 ncclResourceWindow_vidmem is 64 bytes");

// NCCL 2.28.x: no magic or version; GIN fields of the first GIN design.
struct DevCommV22809 {
  int rank, nRanks;
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  void* windowTable;
  ncclWindow_t resourceWindow;
  WindowV22809 resourceWindow_inlined;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginContextCount;
  uint8_t ginTypes[4];
  void* ginHandles[4];
  uint32_t ginSignalBase;
  int ginSignalCount;
  uint32_t ginCounterBase;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
};
static_assert(sizeof(DevCommV22809) == 200, "NCCL 2.28 ncclDevComm is 200 bytes");

// NCCL 2.29.2 (NCCL's own runtime reads 2.29.2-2.29.3 as one layout): 2.28's, with ginTypes
// renamed ginNetDeviceTypes.
struct DevCommV22902 {
  int rank, nRanks;
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  void* windowTable;
  ncclWindow_t resourceWindow;
  WindowV22809 resourceWindow_inlined;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginContextCount;
  uint8_t ginNetDeviceTypes[4];
  void* ginHandles[4];
  uint32_t ginSignalBase;
  int ginSignalCount;
  uint32_t ginCounterBase;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
};
static_assert(sizeof(DevCommV22902) == 200, "NCCL 2.29.2 ncclDevComm is 200 bytes");

// NCCL 2.29.7 (NCCL's runtime: 2.29.5-2.29.7): GIN connections and contexts split; the abort flag
// appears at the end.
struct DevCommV22907 {
  int rank, nRanks;
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  void* windowTable;
  ncclWindow_t resourceWindow;
  WindowV22809 resourceWindow_inlined;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginConnectionCount;
  uint8_t ginNetDeviceTypes[4];
  void* ginHandles[4];
  uint32_t ginSignalBase;
  int ginSignalCount;
  uint32_t ginCounterBase;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
  uint32_t ginContextCount;
  uint32_t ginContextBase;
  bool ginIsRailed;
  uint32_t* abortFlag;
};
static_assert(sizeof(DevCommV22907) == 224, "NCCL 2.29.7 ncclDevComm is 224 bytes");

// NCCL 2.30.x: magic and version first, a 64-byte inlined resource window, hybrid barriers.
struct DevCommV23007 {
  unsigned int magic;
  unsigned int version;
  int rank, nRanks;
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  void* windowTable;
  ncclWindow_t resourceWindow;
  ResourceWindowV23007 resourceWindow_inlined;
  ncclGinBarrierHandle_t hybridWorldGinBarrier;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginConnectionCount;
  uint8_t ginNetDeviceTypes[4];
  void* ginHandles[4];
  int ginSignalCount;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
  uint32_t ginContextCount;
  bool ginConnectionsRailed;
  bool ginStrongLegacySignals;
  bool ginContextsRailed;
  uint32_t* abortFlag;
  ncclLsaBarrierHandle_t hybridLsaBarrier;
  ncclGinBarrierHandle_t hybridRailGinBarrier;
  ncclGinBarrierHandle_t worldGinBarrier;
};
static_assert(sizeof(DevCommV23007) == 240, "NCCL 2.30 ncclDevComm is 240 bytes");

// The requirements of each release. 2.28 has no size/magic/version header: ncclDevCommCreate can
// tell such a structure only by the absence of NCCL_API_MAGIC (NCCL 2.29 and later refuse it).
struct DevCommRequirementsV22809 {
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
};
static_assert(sizeof(DevCommRequirementsV22809) == 56, "NCCL 2.28 ncclDevCommRequirements is 56 bytes");

struct DevCommRequirementsV22902 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
};
static_assert(sizeof(DevCommRequirementsV22902) == 72, "NCCL 2.29.2 ncclDevCommRequirements is 72 bytes");

struct DevCommRequirementsV22907 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinConnectionType_t ginConnectionType;
  bool ginExclusiveContexts;
  int ginQueueDepth;
};
static_assert(sizeof(DevCommRequirementsV22907) == 88, "NCCL 2.29.7 ncclDevCommRequirements is 88 bytes");

struct DevCommRequirementsV23007 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinConnectionType_t ginConnectionType;
  bool ginExclusiveContexts;
  int ginQueueDepth;
  int ginTrafficClass;
  int worldGinBarrierCount;
  bool ginStrongSignalsRequired;
  bool ginVaSignalsRequired;
};
static_assert(sizeof(DevCommRequirementsV23007) == 96, "NCCL 2.30 ncclDevCommRequirements is 96 bytes");

}  // namespace braid
