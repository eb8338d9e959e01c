// The structures of NCCL's device API that a host fills and inline device code reads, per NCCL
// release, as lists of fields: device_api_layout_test.cc measures them in Braid's headers and
// device_api_layout_nvidia.cc (built once per release whose headers are at hand) in NVIDIA's.
// A list names exactly the fields the release has, so the lists themselves are the record of what
// changed between releases (docs/device-api.md tells the same story in words).
//
// DEVAPI_STRUCTS_Vnnnnn(S) calls S(label, FIELDS) for each structure of release nnnnn (its
// NCCL_VERSION_CODE); FIELDS(F) calls F(field) for each field. A side maps the label to a type of
// its own: NVIDIA's side uses the label itself, Braid's side its public type or its record of an
// earlier layout (src/core/dev_comm_layouts.h).
#pragma once

#include <stddef.h>

#include <vector>

// One measured fact: a field's offset and size, or (field "sizeof") the structure's size.
struct DevApiLayoutFact {
  const char* type;
  const char* field;
  size_t offset;
  size_t size;
};

// The fact of one field of structure type T, whose label is the string `name`.
#define DEVAPI_FACT_FIELD(T, name, field) \
  DevApiLayoutFact { name, #field, offsetof(T, field), sizeof(static_cast<T*>(nullptr)->field) }

// The lists keep one line per group of fields (the formatter would repack them).
// clang-format off
// ---- Structures that every release lays out alike ----
#define DEVAPI_TEAM_FIELDS(F) F(nRanks) F(rank) F(stride)
#define DEVAPI_MULTIMEM_HANDLE_FIELDS(F) F(mcBasePtr)
#define DEVAPI_LSA_BARRIER_HANDLE_FIELDS(F) F(bufHandle) F(nBarriers)
#define DEVAPI_LLA2A_HANDLE_FIELDS(F) F(bufHandle) F(nSlots)
/* Its second field is `bufHandle` before 2.29.7 and `unused` since; same offset and size. */
#define DEVAPI_GIN_BARRIER_HANDLE_FIELDS(F) F(signal0)
#define DEVAPI_RESOURCE_REQS_FIELDS(F) \
  F(next) F(bufferSize) F(bufferAlign) F(outBufferHandle) \
  F(ginSignalCount) F(ginCounterCount) F(outGinSignalStart) F(outGinCounterStart)
#define DEVAPI_TEAM_REQS_FIELDS(F) F(next) F(team) F(multimem) F(outMultimemHandle)

// ---- ncclWindow_vidmem ----
#define DEVAPI_WINDOW_COMMON_FIELDS(F) \
  F(winHost) F(lsaFlatBase) F(lsaRank) F(worldRank) F(stride4G) F(mcOffset4K) F(ginOffset4K)
#define DEVAPI_WINDOW_V22809_FIELDS(F) DEVAPI_WINDOW_COMMON_FIELDS(F) F(ginWins)
#define DEVAPI_WINDOW_V23007_FIELDS(F) DEVAPI_WINDOW_V22809_FIELDS(F) F(ginMultiSegmentWins) F(numSegments)
#define DEVAPI_WINDOW_V23203_FIELDS(F) \
  DEVAPI_WINDOW_COMMON_FIELDS(F) F(winFlags) F(ginWinsDefaultBackend) \
  F(ginMultiSegmentWins) F(numSegments) F(cftFlatRank) F(ucLeIdBase)

// ---- ncclResourceWindow_vidmem (the inlined resource window, 2.30 and later) ----
#define DEVAPI_RESOURCE_WINDOW_V23007_FIELDS(F) F(lsaFlatBase) F(stride4G) F(mcOffset4K)
#define DEVAPI_RESOURCE_WINDOW_V23203_FIELDS(F) F(lsaFlatBase) F(stride4G) F(mcOffset4K)

// ---- ncclDevComm ----
#define DEVAPI_DEVCOMM_RANKS_FIELDS(F) \
  F(rank) F(nRanks) F(nRanks_rcp32) F(lsaRank) F(lsaSize) F(lsaSize_rcp32) F(windowTable) F(resourceWindow)
#define DEVAPI_DEVCOMM_INLINED_V22809_FIELDS(F) \
  F(resourceWindow_inlined) F(resourceWindow_inlined.lsaFlatBase) F(resourceWindow_inlined.lsaRank) \
  F(resourceWindow_inlined.worldRank) F(resourceWindow_inlined.stride4G) F(resourceWindow_inlined.mcOffset4K)
#define DEVAPI_DEVCOMM_INLINED_V23007_FIELDS(F) \
  F(resourceWindow_inlined) F(resourceWindow_inlined.lsaFlatBase) F(resourceWindow_inlined.stride4G) \
  F(resourceWindow_inlined.mcOffset4K)
#define DEVAPI_DEVCOMM_GIN_V22809_FIELDS(F) \
  F(ginHandles) F(ginSignalBase) F(ginSignalCount) F(ginCounterBase) F(ginCounterCount) F(ginSignalShadows)
#define DEVAPI_DEVCOMM_V22809_FIELDS(F) \
  DEVAPI_DEVCOMM_RANKS_FIELDS(F) DEVAPI_DEVCOMM_INLINED_V22809_FIELDS(F) \
  F(lsaMultimem) F(lsaBarrier) F(railGinBarrier) \
  F(ginContextCount) F(ginTypes) DEVAPI_DEVCOMM_GIN_V22809_FIELDS(F)
#define DEVAPI_DEVCOMM_V22902_FIELDS(F) \
  DEVAPI_DEVCOMM_RANKS_FIELDS(F) DEVAPI_DEVCOMM_INLINED_V22809_FIELDS(F) \
  F(lsaMultimem) F(lsaBarrier) F(railGinBarrier) \
  F(ginContextCount) F(ginNetDeviceTypes) DEVAPI_DEVCOMM_GIN_V22809_FIELDS(F)
#define DEVAPI_DEVCOMM_V22907_FIELDS(F) \
  DEVAPI_DEVCOMM_RANKS_FIELDS(F) DEVAPI_DEVCOMM_INLINED_V22809_FIELDS(F) \
  F(lsaMultimem) F(lsaBarrier) F(railGinBarrier) \
  F(ginConnectionCount) F(ginNetDeviceTypes) DEVAPI_DEVCOMM_GIN_V22809_FIELDS(F) \
  F(ginContextCount) F(ginContextBase) F(ginIsRailed) \
  F(abortFlag)
#define DEVAPI_DEVCOMM_V23007_FIELDS(F) \
  F(magic) F(version) DEVAPI_DEVCOMM_RANKS_FIELDS(F) DEVAPI_DEVCOMM_INLINED_V23007_FIELDS(F) \
  F(hybridWorldGinBarrier) F(lsaMultimem) F(lsaBarrier) F(railGinBarrier) \
  F(ginConnectionCount) F(ginNetDeviceTypes) F(ginHandles) F(ginSignalCount) F(ginCounterCount) \
  F(ginSignalShadows) F(ginContextCount) F(ginConnectionsRailed) F(ginStrongLegacySignals) F(ginContextsRailed) \
  F(abortFlag) F(hybridLsaBarrier) F(hybridRailGinBarrier) F(worldGinBarrier)
#define DEVAPI_DEVCOMM_V23203_FIELDS(F) \
  F(magic) F(version) DEVAPI_DEVCOMM_RANKS_FIELDS(F) DEVAPI_DEVCOMM_INLINED_V23007_FIELDS(F) \
  F(hybridDenseGinBarrier) F(lsaMultimem) F(lsaBarrier) F(railGinBarrier) \
  F(ginConnectionCount) F(backendIndex) F(ginNetDeviceTypes) F(ginHandles) F(ginSignalCount) F(ginCounterCount) \
  F(ginSignalShadows) F(ginContextCount) F(ginConnectionStride) F(ginContextStride) F(ginStrongLegacySignals) \
  F(abortFlag) F(hybridLsaBarrier) F(hybridRailGinBarrier) F(worldGinBarrier) F(ginConnectionStride_rcp32) \
  F(cftRank) F(cftSize) F(cftMultimemRank) F(cftMultimemSize) F(cftMultimemSize_rcp32) F(ucLeId) F(mcLeId) \
  F(cftBarrier) F(cftMultimemBarrier)

// ---- ncclDevCommRequirements ----
#define DEVAPI_REQS_BODY_V22809_FIELDS(F) \
  F(resourceRequirementsList) F(teamRequirementsList) F(lsaMultimem) \
  F(barrierCount) F(lsaBarrierCount) F(railGinBarrierCount) F(lsaLLA2ABlockCount) F(lsaLLA2ASlotCount) \
  F(ginForceEnable) F(ginContextCount) F(ginSignalCount) F(ginCounterCount)
#define DEVAPI_REQS_V22809_FIELDS(F) DEVAPI_REQS_BODY_V22809_FIELDS(F)
#define DEVAPI_REQS_V22902_FIELDS(F) F(size) F(magic) F(version) DEVAPI_REQS_BODY_V22809_FIELDS(F)
#define DEVAPI_REQS_V22907_FIELDS(F) \
  DEVAPI_REQS_V22902_FIELDS(F) F(ginConnectionType) F(ginExclusiveContexts) F(ginQueueDepth)
#define DEVAPI_REQS_V23007_FIELDS(F) \
  DEVAPI_REQS_V22907_FIELDS(F) F(ginTrafficClass) F(worldGinBarrierCount) F(ginStrongSignalsRequired) \
  F(ginVaSignalsRequired)
#define DEVAPI_REQS_V23203_FIELDS(F) \
  DEVAPI_REQS_V23007_FIELDS(F) F(ginCustomStride) F(ginType) F(useRuntimeVersion) F(cftCaps) F(cftBarrierCount)

// ---- The structures of each release ----
#define DEVAPI_STRUCTS_COMMON(S) \
  S(ncclTeam, DEVAPI_TEAM_FIELDS) \
  S(ncclMultimemHandle, DEVAPI_MULTIMEM_HANDLE_FIELDS) \
  S(ncclLsaBarrierHandle, DEVAPI_LSA_BARRIER_HANDLE_FIELDS) \
  S(ncclLLA2AHandle, DEVAPI_LLA2A_HANDLE_FIELDS) \
  S(ncclGinBarrierHandle, DEVAPI_GIN_BARRIER_HANDLE_FIELDS) \
  S(ncclDevResourceRequirements, DEVAPI_RESOURCE_REQS_FIELDS) \
  S(ncclTeamRequirements, DEVAPI_TEAM_REQS_FIELDS)
#define DEVAPI_STRUCTS_V22809(S) \
  DEVAPI_STRUCTS_COMMON(S) \
  S(ncclWindow_vidmem, DEVAPI_WINDOW_V22809_FIELDS) \
  S(ncclDevComm, DEVAPI_DEVCOMM_V22809_FIELDS) \
  S(ncclDevCommRequirements, DEVAPI_REQS_V22809_FIELDS)
#define DEVAPI_STRUCTS_V22902(S) \
  DEVAPI_STRUCTS_COMMON(S) \
  S(ncclWindow_vidmem, DEVAPI_WINDOW_V22809_FIELDS) \
  S(ncclDevComm, DEVAPI_DEVCOMM_V22902_FIELDS) \
  S(ncclDevCommRequirements, DEVAPI_REQS_V22902_FIELDS)
#define DEVAPI_STRUCTS_V22907(S) \
  DEVAPI_STRUCTS_COMMON(S) \
  S(ncclWindow_vidmem, DEVAPI_WINDOW_V22809_FIELDS) \
  S(ncclDevComm, DEVAPI_DEVCOMM_V22907_FIELDS) \
  S(ncclDevCommRequirements, DEVAPI_REQS_V22907_FIELDS)
#define DEVAPI_STRUCTS_V23007(S) \
  DEVAPI_STRUCTS_COMMON(S) \
  S(ncclWindow_vidmem, DEVAPI_WINDOW_V23007_FIELDS) \
  S(ncclResourceWindow_vidmem, DEVAPI_RESOURCE_WINDOW_V23007_FIELDS) \
  S(ncclDevComm, DEVAPI_DEVCOMM_V23007_FIELDS) \
  S(ncclDevCommRequirements, DEVAPI_REQS_V23007_FIELDS)
#define DEVAPI_STRUCTS_V23203(S) \
  DEVAPI_STRUCTS_COMMON(S) \
  S(ncclCftBarrierHandle, DEVAPI_LSA_BARRIER_HANDLE_FIELDS) \
  S(ncclWindow_vidmem, DEVAPI_WINDOW_V23203_FIELDS) \
  S(ncclResourceWindow_vidmem, DEVAPI_RESOURCE_WINDOW_V23203_FIELDS) \
  S(ncclDevComm, DEVAPI_DEVCOMM_V23203_FIELDS) \
  S(ncclDevCommRequirements, DEVAPI_REQS_V23203_FIELDS)
// clang-format on

// The releases whose layouts are recorded, by NCCL_VERSION_CODE.
#define DEVAPI_RELEASES(R) R(22809) R(22902) R(22907) R(23007) R(23203)

// NVIDIA's facts of release nnnnn, defined by device_api_layout_nvidia.cc when it was built
// against that release's headers (DEVAPI_NVIDIA_nnnnn is then defined for the test).
#define DEVAPI_NVIDIA_FACTS_DECL(code) std::vector<DevApiLayoutFact> devApiNvidiaFacts##code();
DEVAPI_RELEASES(DEVAPI_NVIDIA_FACTS_DECL)
#undef DEVAPI_NVIDIA_FACTS_DECL
