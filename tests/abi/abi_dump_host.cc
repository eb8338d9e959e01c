// abi_dump_host -- prints every ABI fact of an nccl_device/host.h (NCCL 2.32.3), the host side of the
// device API, in the line format of abi_dump.c: the enums, the handle and requirement structs
// with their tags, the values of NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER and
// NCCL_COMM_PROPERTIES_INITIALIZER, and the type of each of its 22 functions.
//
// C++ only: NVIDIA's host.h includes device-API headers that only compile as C++. The nccl.h of the
// same release comes first, by absolute path (ABI_NCCL_H), so the `#include <nccl.h>` inside host.h
// finds it already included (both headers guard with NCCL_H_) instead of whichever nccl.h the
// include path holds first; host.h itself comes in by absolute path too (ABI_HOST_H).
#ifndef ABI_NCCL_H
#error "build with -DABI_NCCL_H=\"/path/to/nccl.h\" -DABI_HOST_H=\"/path/to/nccl_device/host.h\""
#endif
#include ABI_NCCL_H
#include ABI_HOST_H

#include "abi_dump_common.h"
#include "abi_functions.h"

// NCCL_COMM_PROPERTIES_INITIALIZER names only the first three fields on purpose.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

void dumpEnums() {
  PRINT_SIZE(ncclGinType_t);
  PRINT_ENUM(NCCL_GIN_TYPE_NONE);
  PRINT_ENUM(NCCL_GIN_TYPE_PROXY);
  PRINT_ENUM(NCCL_GIN_TYPE_GDAKI);
  PRINT_ENUM(NCCL_GIN_TYPE_GPI);
  PRINT_ENUM(NCCL_GIN_TYPE_EFA_GDA);
  PRINT_ENUM(NCCL_GIN_MAX_TYPES);

  PRINT_SIZE(ncclGinConnectionType_t);
  PRINT_ENUM(NCCL_GIN_CONNECTION_NONE);
  PRINT_ENUM(NCCL_GIN_CONNECTION_FULL);
  PRINT_ENUM(NCCL_GIN_CONNECTION_RAIL);
  PRINT_ENUM(NCCL_GIN_CONNECTION_CUSTOM_STRIDE);

  PRINT_SIZE(ncclCftTeamMode_t);
  PRINT_ENUM(NCCL_CFT_TEAM_FLAT);
  PRINT_ENUM(NCCL_CFT_TEAM_HIER_MULTIMEM);
  PRINT_ENUM(NCCL_CFT_TEAM_HIER_LSA);

  PRINT_SIZE(ncclCftCap_t);
  PRINT_ENUM(NCCL_CFT_NONE);
  PRINT_ENUM(NCCL_CFT);
  PRINT_ENUM(NCCL_CFT_MULTIMEM);

#ifdef NCCL_GIN_MAX_ACTIVE_BACKENDS
  PRINT_INT_MACRO(NCCL_GIN_MAX_ACTIVE_BACKENDS);
#else
  PRINT_MACRO_UNDEFINED("NCCL_GIN_MAX_ACTIVE_BACKENDS");
#endif
}

// The small types device code receives from the host: ids, a team, and handles.
void dumpHandles() {
  PRINT_SIZE(ncclDevResourceHandle_t);
  PRINT_SIZE(ncclGinSignal_t);
  PRINT_SIZE(ncclGinCounter_t);
  PRINT_SIZE(ncclCftLeId_t);

  PRINT_SIZE(ncclTeam_t);
  PRINT_FIELD(ncclTeam_t, nRanks);
  PRINT_FIELD(ncclTeam_t, rank);
  PRINT_FIELD(ncclTeam_t, stride);

  PRINT_SIZE(ncclMultimemHandle_t);
  PRINT_FIELD(ncclMultimemHandle_t, mcBasePtr);
  PRINT_SIZE(ncclLsaBarrierHandle_t);
  PRINT_FIELD(ncclLsaBarrierHandle_t, bufHandle);
  PRINT_FIELD(ncclLsaBarrierHandle_t, nBarriers);
  PRINT_SIZE(ncclGinBarrierHandle_t);
  PRINT_FIELD(ncclGinBarrierHandle_t, signal0);
  PRINT_FIELD(ncclGinBarrierHandle_t, unused);
  PRINT_SIZE(ncclCftBarrierHandle_t);
  PRINT_FIELD(ncclCftBarrierHandle_t, bufHandle);
  PRINT_FIELD(ncclCftBarrierHandle_t, nBarriers);
  PRINT_SIZE(ncclLLA2AHandle_t);
  PRINT_FIELD(ncclLLA2AHandle_t, bufHandle);
  PRINT_FIELD(ncclLLA2AHandle_t, nSlots);
}

void dumpResourceRequirements() {
  PRINT_SIZE(ncclDevResourceRequirements_t);
  PRINT_FIELD(ncclDevResourceRequirements_t, next);
  PRINT_FIELD(ncclDevResourceRequirements_t, bufferSize);
  PRINT_FIELD(ncclDevResourceRequirements_t, bufferAlign);
  PRINT_FIELD(ncclDevResourceRequirements_t, outBufferHandle);
  PRINT_FIELD(ncclDevResourceRequirements_t, ginSignalCount);
  PRINT_FIELD(ncclDevResourceRequirements_t, ginCounterCount);
  PRINT_FIELD(ncclDevResourceRequirements_t, outGinSignalStart);
  PRINT_FIELD(ncclDevResourceRequirements_t, outGinCounterStart);

  PRINT_SIZE(ncclTeamRequirements_t);
  PRINT_FIELD(ncclTeamRequirements_t, next);
  PRINT_FIELD(ncclTeamRequirements_t, team);
  PRINT_FIELD(ncclTeamRequirements_t, multimem);
  PRINT_FIELD(ncclTeamRequirements_t, outMultimemHandle);
}

void dumpDevCommRequirements() {
  PRINT_SIZE(ncclDevCommRequirements_t);
  PRINT_FIELD(ncclDevCommRequirements_t, size);
  PRINT_FIELD(ncclDevCommRequirements_t, magic);
  PRINT_FIELD(ncclDevCommRequirements_t, version);
  PRINT_FIELD(ncclDevCommRequirements_t, resourceRequirementsList);
  PRINT_FIELD(ncclDevCommRequirements_t, teamRequirementsList);
  PRINT_FIELD(ncclDevCommRequirements_t, lsaMultimem);
  PRINT_FIELD(ncclDevCommRequirements_t, barrierCount);
  PRINT_FIELD(ncclDevCommRequirements_t, lsaBarrierCount);
  PRINT_FIELD(ncclDevCommRequirements_t, railGinBarrierCount);
  PRINT_FIELD(ncclDevCommRequirements_t, lsaLLA2ABlockCount);
  PRINT_FIELD(ncclDevCommRequirements_t, lsaLLA2ASlotCount);
  PRINT_FIELD(ncclDevCommRequirements_t, ginForceEnable);
  PRINT_FIELD(ncclDevCommRequirements_t, ginContextCount);
  PRINT_FIELD(ncclDevCommRequirements_t, ginSignalCount);
  PRINT_FIELD(ncclDevCommRequirements_t, ginCounterCount);
  PRINT_FIELD(ncclDevCommRequirements_t, ginConnectionType);
  PRINT_FIELD(ncclDevCommRequirements_t, ginExclusiveContexts);
  PRINT_FIELD(ncclDevCommRequirements_t, ginQueueDepth);
  PRINT_FIELD(ncclDevCommRequirements_t, ginTrafficClass);
  PRINT_FIELD(ncclDevCommRequirements_t, worldGinBarrierCount);
  PRINT_FIELD(ncclDevCommRequirements_t, ginStrongSignalsRequired);
  PRINT_FIELD(ncclDevCommRequirements_t, ginVaSignalsRequired);
  PRINT_FIELD(ncclDevCommRequirements_t, ginCustomStride);
  PRINT_FIELD(ncclDevCommRequirements_t, ginType);
  PRINT_FIELD(ncclDevCommRequirements_t, useRuntimeVersion);
  PRINT_FIELD(ncclDevCommRequirements_t, cftCaps);
  PRINT_FIELD(ncclDevCommRequirements_t, cftBarrierCount);
}

void dumpCommProperties() {
  PRINT_SIZE(ncclCommProperties_t);
  PRINT_FIELD(ncclCommProperties_t, size);
  PRINT_FIELD(ncclCommProperties_t, magic);
  PRINT_FIELD(ncclCommProperties_t, version);
  PRINT_FIELD(ncclCommProperties_t, rank);
  PRINT_FIELD(ncclCommProperties_t, nRanks);
  PRINT_FIELD(ncclCommProperties_t, cudaDev);
  PRINT_FIELD(ncclCommProperties_t, nvmlDev);
  PRINT_FIELD(ncclCommProperties_t, deviceApiSupport);
  PRINT_FIELD(ncclCommProperties_t, multimemSupport);
  PRINT_FIELD(ncclCommProperties_t, ginType);
  PRINT_FIELD(ncclCommProperties_t, nLsaTeams);
  PRINT_FIELD(ncclCommProperties_t, hostRmaSupport);
  PRINT_FIELD(ncclCommProperties_t, railedGinType);
  PRINT_FIELD(ncclCommProperties_t, commHash);
  PRINT_FIELD(ncclCommProperties_t, ginMinStride);
  PRINT_FIELD(ncclCommProperties_t, ginConnectionType);
  PRINT_FIELD(ncclCommProperties_t, ginSupport);
  PRINT_FIELD(ncclCommProperties_t, devCommRuntimeVersionSize);
  PRINT_FIELD(ncclCommProperties_t, cftSupport);
  PRINT_FIELD(ncclCommProperties_t, cftMulticastSupport);
  PRINT_FIELD(ncclCommProperties_t, cftCountedSupport);
}

void dumpDevCommRequirementsInitializer() {
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  const char* r = "init.NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER";
  PRINT_INT_FIELD(r, reqs, size);
  PRINT_HEX_FIELD(r, reqs, magic);
  PRINT_INT_FIELD(r, reqs, version);
  PRINT_PTR_FIELD(r, reqs, resourceRequirementsList);
  PRINT_PTR_FIELD(r, reqs, teamRequirementsList);
  PRINT_INT_FIELD(r, reqs, lsaMultimem);
  PRINT_INT_FIELD(r, reqs, barrierCount);
  PRINT_INT_FIELD(r, reqs, lsaBarrierCount);
  PRINT_INT_FIELD(r, reqs, railGinBarrierCount);
  PRINT_INT_FIELD(r, reqs, lsaLLA2ABlockCount);
  PRINT_INT_FIELD(r, reqs, lsaLLA2ASlotCount);
  PRINT_INT_FIELD(r, reqs, ginForceEnable);
  PRINT_INT_FIELD(r, reqs, ginContextCount);
  PRINT_INT_FIELD(r, reqs, ginSignalCount);
  PRINT_INT_FIELD(r, reqs, ginCounterCount);
  PRINT_INT_FIELD(r, reqs, ginConnectionType);
  PRINT_INT_FIELD(r, reqs, ginExclusiveContexts);
  PRINT_INT_FIELD(r, reqs, ginQueueDepth);
  PRINT_INT_FIELD(r, reqs, ginTrafficClass);
  PRINT_INT_FIELD(r, reqs, worldGinBarrierCount);
  PRINT_INT_FIELD(r, reqs, ginStrongSignalsRequired);
  PRINT_INT_FIELD(r, reqs, ginVaSignalsRequired);
  PRINT_INT_FIELD(r, reqs, ginCustomStride);
  PRINT_INT_FIELD(r, reqs, ginType);
  PRINT_INT_FIELD(r, reqs, useRuntimeVersion);
  PRINT_INT_FIELD(r, reqs, cftCaps);
  PRINT_INT_FIELD(r, reqs, cftBarrierCount);
}

// The initializer names size, magic and version; the language zeroes every other field.
void dumpCommPropertiesInitializer() {
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  const char* p = "init.NCCL_COMM_PROPERTIES_INITIALIZER";
  PRINT_INT_FIELD(p, props, size);
  PRINT_HEX_FIELD(p, props, magic);
  PRINT_INT_FIELD(p, props, version);
  PRINT_INT_FIELD(p, props, rank);
  PRINT_INT_FIELD(p, props, nRanks);
  PRINT_INT_FIELD(p, props, cudaDev);
  PRINT_INT_FIELD(p, props, nvmlDev);
  PRINT_INT_FIELD(p, props, deviceApiSupport);
  PRINT_INT_FIELD(p, props, multimemSupport);
  PRINT_INT_FIELD(p, props, ginType);
  PRINT_INT_FIELD(p, props, nLsaTeams);
  PRINT_INT_FIELD(p, props, hostRmaSupport);
  PRINT_INT_FIELD(p, props, railedGinType);
  PRINT_HEX_FIELD(p, props, commHash);
  PRINT_INT_FIELD(p, props, ginMinStride);
  PRINT_INT_FIELD(p, props, ginConnectionType);
  int ginSupported = 0;
  for (bool supported : props.ginSupport) ginSupported += supported ? 1 : 0;
  printf("%s.ginSupport %d of 64 true\n", p, ginSupported);
  PRINT_INT_FIELD(p, props, devCommRuntimeVersionSize);
  PRINT_INT_FIELD(p, props, cftSupport);
  PRINT_INT_FIELD(p, props, cftMulticastSupport);
  PRINT_INT_FIELD(p, props, cftCountedSupport);
}

#define ABI_COUNT_ONE(name) +1
#define ABI_IGNORE(name)
// The 22 functions (X entries of the list); each must be declared, or this does not build. The two U
// entries have no Linux declaration in either header and are left out.
void dumpFunctions() {
#define ABI_PRINT_FUNCTION(fn)               \
  printf("function.nccl%s declared\n", #fn); \
  printf("cxx.sig.nccl%s %s\n", #fn, ABI_MANGLED(nccl##fn));
  NCCL_ABI_DEVICE_FUNCTIONS(ABI_PRINT_FUNCTION, ABI_IGNORE)
#undef ABI_PRINT_FUNCTION
  printf("function.count %d\n", 0 NCCL_ABI_DEVICE_FUNCTIONS(ABI_COUNT_ONE, ABI_IGNORE));
}

void dumpTypeNames() {
#define ABI_PRINT_TYPE(type) printf("cxx.type.%s %s\n", #type, ABI_MANGLED(type));
#define ABI_PRINT_ENUM_TYPE(type) \
  ABI_PRINT_TYPE(type)            \
  printf("cxx.enum_underlying.%s %s\n", #type, ABI_MANGLED(std::underlying_type_t<type>));
  ABI_PRINT_ENUM_TYPE(ncclGinType_t)
  ABI_PRINT_ENUM_TYPE(ncclGinConnectionType_t)
  ABI_PRINT_ENUM_TYPE(ncclCftTeamMode_t)
  ABI_PRINT_ENUM_TYPE(ncclCftCap_t)
  ABI_PRINT_TYPE(ncclDevResourceHandle)
  ABI_PRINT_TYPE(ncclDevResourceHandle_t)
  ABI_PRINT_TYPE(ncclGinSignal_t)
  ABI_PRINT_TYPE(ncclGinCounter_t)
  ABI_PRINT_TYPE(ncclCftLeId)
  ABI_PRINT_TYPE(ncclCftLeId_t)
  ABI_PRINT_TYPE(ncclDevComm_t*)  // incomplete in Braid's header: its layout belongs to the device API
  ABI_PRINT_TYPE(ncclTeam_t)
  ABI_PRINT_TYPE(ncclMultimemHandle_t)
  ABI_PRINT_TYPE(ncclLsaBarrierHandle_t)
  ABI_PRINT_TYPE(ncclGinBarrierHandle_t)
  ABI_PRINT_TYPE(ncclCftBarrierHandle_t)
  ABI_PRINT_TYPE(ncclLLA2AHandle_t)
  ABI_PRINT_TYPE(ncclDevResourceRequirements_t)
  ABI_PRINT_TYPE(ncclTeamRequirements_t)
  ABI_PRINT_TYPE(ncclDevCommRequirements_t)
  ABI_PRINT_TYPE(ncclCommProperties_t)
#undef ABI_PRINT_ENUM_TYPE
#undef ABI_PRINT_TYPE
}

}  // namespace

int main() {
  dumpEnums();
  dumpHandles();
  dumpResourceRequirements();
  dumpDevCommRequirements();
  dumpCommProperties();
  dumpDevCommRequirementsInitializer();
  dumpCommPropertiesInitializer();
  dumpFunctions();
  dumpTypeNames();
  return 0;
}
