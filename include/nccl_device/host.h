/*
 * nccl_device/host.h -- the host side of NCCL's device API (NCCL 2.32.3): communicator properties,
 * teams, device-communicator requirements and window pointer lookups, with the struct layouts and
 * initializers of NVIDIA's nccl_device/host.h, so that a program that queries them runs on Braid.
 *
 * Braid implements ncclCommQueryProperties, device communicators (ncclDevCommCreate and
 * ncclDevCommDestroy, with LSA barriers, hybrid barriers, the LL all-to-all and
 * a program's own resource buffers), the requirement builders, the team functions and the window
 * pointer lookups; GIN over the proxy transport (nccl_device/gin.h). Multicast and CFT need
 * hardware Braid does not drive: ncclCommQueryProperties reports them unsupported and
 * ncclDevCommCreate refuses requirements that ask for them, with a WARN that names them. The device side is
 * nccl_device.h; the structures a device communicator is made of (struct ncclDevComm, a window's device descriptor) are
 * in nccl_device/comm.h, included at the end.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_HOST_H_
#define NCCL_DEVICE_HOST_H_

#include <nccl.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
#define NCCL_EXTERN_C extern "C"
#else
#define NCCL_EXTERN_C
#endif

typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;
typedef uint32_t ncclCftLeId;
typedef ncclCftLeId ncclCftLeId_t;

/* The device communicator; nccl_device/comm.h (included at the end) defines it. */
struct ncclDevComm;
typedef struct ncclDevComm ncclDevComm_t;

/* Handles the host hands to device code: a multicast base address, and resource buffers (barriers,
 * the LL all-to-all) by their handle within the device communicator's resource window. */
struct ncclMultimemHandle {
  void* mcBasePtr;
};
typedef struct ncclMultimemHandle ncclMultimemHandle_t;
struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
};
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t unused;
};
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
struct ncclCftBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
};
typedef struct ncclCftBarrierHandle ncclCftBarrierHandle_t;
struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
};
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

/* A set of ranks: `nRanks` ranks, `stride` apart in the world, of which the caller is `rank`. */
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;

typedef enum {
  NCCL_GIN_CONNECTION_NONE,
  NCCL_GIN_CONNECTION_FULL,
  NCCL_GIN_CONNECTION_RAIL,
  NCCL_GIN_CONNECTION_CUSTOM_STRIDE,
} ncclGinConnectionType_t;

typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4,
  NCCL_GIN_TYPE_EFA_GDA = 5,
  NCCL_GIN_MAX_TYPES = 6,
} ncclGinType_t;

typedef enum {
  NCCL_CFT_TEAM_FLAT,
  NCCL_CFT_TEAM_HIER_MULTIMEM,
  NCCL_CFT_TEAM_HIER_LSA,
} ncclCftTeamMode_t;

typedef enum {
  NCCL_CFT_NONE = 0x0,
  NCCL_CFT = 0x1,
  NCCL_CFT_MULTIMEM = 0x2,
} ncclCftCap_t;

#define NCCL_GIN_MAX_ACTIVE_BACKENDS 4

/* One buffer (and GIN signals/counters) a device communicator must provide. */
typedef struct ncclDevResourceRequirements {
  struct ncclDevResourceRequirements* next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t* outGinSignalStart;
  ncclGinCounter_t* outGinCounterStart;
} ncclDevResourceRequirements_t;

typedef struct ncclTeamRequirements {
  struct ncclTeamRequirements* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t* outMultimemHandle;
} ncclTeamRequirements_t;

/* What ncclDevCommCreate is asked for. Start from NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER. */
typedef struct ncclDevCommRequirements {
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
  int ginCustomStride;
  ncclGinType_t ginType;
  bool useRuntimeVersion;
  int cftCaps;
  int cftBarrierCount;
} ncclDevCommRequirements_t;

#define NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER                        \
  {                                                                   \
    sizeof(ncclDevCommRequirements_t), /* size */                     \
        NCCL_API_MAGIC,                /* magic */                    \
        NCCL_VERSION_CODE,             /* version */                  \
        NULL,                          /* resourceRequirementsList */ \
        NULL,                          /* teamRequirementsList */     \
        false,                         /* lsaMultimem */              \
        0,                             /* barrierCount */             \
        0,                             /* lsaBarrierCount */          \
        0,                             /* railGinBarrierCount */      \
        0,                             /* lsaLLA2ABlockCount */       \
        0,                             /* lsaLLA2ASlotCount */        \
        false,                         /* ginForceEnable */           \
        4,                             /* ginContextCount */          \
        0,                             /* ginSignalCount */           \
        0,                             /* ginCounterCount */          \
        NCCL_GIN_CONNECTION_NONE,      /* ginConnectionType */        \
        false,                         /* ginExclusiveContexts */     \
        0,                             /* ginQueueDepth */            \
        NCCL_CONFIG_UNDEF_INT,         /* ginTrafficClass */          \
        0,                             /* worldGinBarrierCount */     \
        true,                          /* ginStrongSignalsRequired */ \
        true,                          /* ginVaSignalsRequired */     \
        1,                             /* ginCustomStride */          \
        NCCL_GIN_TYPE_NONE,            /* ginType */                  \
        false,                         /* useRuntimeVersion */        \
        NCCL_CFT_NONE,                 /* cftCaps */                  \
        0,                             /* cftBarrierCount */          \
  }

/* What ncclCommQueryProperties reports. The library fills the fields that fit in `size`. */
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
  uint64_t commHash;
  int ginMinStride;
  ncclGinConnectionType_t ginConnectionType;
  bool ginSupport[64];
  size_t devCommRuntimeVersionSize;
  bool cftSupport;
  bool cftMulticastSupport;
  bool cftCountedSupport;
} ncclCommProperties_t;

#define NCCL_COMM_PROPERTIES_INITIALIZER        \
  {                                             \
    sizeof(ncclCommProperties_t), /* size */    \
        NCCL_API_MAGIC,           /* magic */   \
        NCCL_VERSION_CODE,        /* version */ \
  }

/* Communicator properties and device communicators. */
NCCL_EXTERN_C ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);
NCCL_EXTERN_C ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
                                             ncclDevComm_t* outDevComm);
NCCL_EXTERN_C ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm);

/* Device addresses inside a window: of a peer (by LSA rank or world rank) or of its multicast
 * object (NULL where there is none). */
NCCL_EXTERN_C ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
NCCL_EXTERN_C ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                                        ncclMultimemHandle_t multimem, void** outPtr);
NCCL_EXTERN_C ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void** outPtr);
NCCL_EXTERN_C ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);

/* The same through CFT logical endpoints (Blackwell, CUDA 13.3 and later). */
NCCL_EXTERN_C ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
                                                       size_t* leOffset);
NCCL_EXTERN_C ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam,
                                                  ncclCftLeId* leId, size_t* leOffset);
NCCL_EXTERN_C ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId* leId,
                                                   size_t* leOffset);

/* Teams of a communicator: the world, the ranks that can load/store each other's memory (LSA), the
 * ranks with the same LSA index on other LSA teams (rail), and rank translations between them. */
NCCL_EXTERN_C ncclTeam_t ncclTeamWorld(ncclComm_t comm);
NCCL_EXTERN_C ncclTeam_t ncclTeamLsa(ncclComm_t comm);
#ifdef __cplusplus
NCCL_EXTERN_C ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT);
#else
NCCL_EXTERN_C ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode);
#endif
NCCL_EXTERN_C ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm);
NCCL_EXTERN_C int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
NCCL_EXTERN_C int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);
NCCL_EXTERN_C ncclTeam_t ncclTeamRail(ncclComm_t comm);

/* Resources a device communicator is asked to provide. */
NCCL_EXTERN_C ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                                           ncclLsaBarrierHandle_t* outHandle,
                                                           ncclDevResourceRequirements_t* outReq);
NCCL_EXTERN_C ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                                           ncclGinBarrierHandle_t* outHandle,
                                                           ncclDevResourceRequirements_t* outReq);
NCCL_EXTERN_C ncclResult_t ncclCftBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                                           ncclCftBarrierHandle_t* outHandle,
                                                           ncclDevResourceRequirements_t* outReq);
NCCL_EXTERN_C int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
NCCL_EXTERN_C ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                                      ncclDevResourceRequirements_t* outReq);

/* The structures these functions fill: struct ncclDevComm and a window's device descriptor. */
#include "comm.h"

#endif /* NCCL_DEVICE_HOST_H_ */
