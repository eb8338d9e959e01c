/*
 * nccl_device/comm.h -- the structures that the library fills and device code reads: a window's
 * device descriptor (struct ncclWindow_vidmem, which ncclWindow_t points to) and the device
 * communicator (struct ncclDevComm, which kernels take by value). Their layouts are NCCL 2.32.3's,
 * byte for byte, because code compiled against NVIDIA's nccl_device.h reads them inline; see
 * docs/device-api.md for how earlier releases laid them out.
 *
 * Addressing a window: the copies of one window held by the ranks of an LSA team (the ranks that
 * can load and store each other's memory) are mapped at one flat range of the caller's address
 * space, rank r's copy at lsaFlatBase + r * (stride4G << 32); an offset into the window is added to
 * that. The resource window of a device communicator is addressed the same way, through the three
 * fields of resourceWindow_inlined, which sit in ncclDevComm so that a barrier needs no load
 * through the window pointer.
 *
 * This file compiles as C and C++; nccl_device/host.h includes it.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_COMM_H_
#define NCCL_DEVICE_COMM_H_

#include <cuda.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "utility.h"

/* GIN (GPU-initiated networking) handles as the structures below carry them. A device
 * communicator made without GIN resources leaves them zero, its GIN connection count 0. */
#define NCCL_GIN_MAX_CONNECTIONS 4
typedef struct ncclGinGpuCtx* ncclGinGpuCtx_t;
typedef void* ncclGinWindow_t;
typedef enum ncclGinSignalOp_t { ncclGinSignalInc = 0, ncclGinSignalAdd } ncclGinSignalOp_t;
typedef struct {
  uint64_t opaque[2];
} ncclGinRequest_t;

/* A CFT logical endpoint id that names nothing. */
#define NCCL_LE_ID_INVALID ((ncclCftLeId_t)-1)

/* One physical segment of a window built from several allocations, for GIN. */
struct ncclSegmentWindow {
  ncclGinWindow_t ginWins[NCCL_GIN_MAX_CONNECTIONS];
  size_t segmentSize;
  CUmemLocationType memType;
};

/* A window's device descriptor. The first seven fields have kept their offsets in every release
 * of the device API; the rest appeared or moved later (docs/device-api.md). */
struct ncclWindow_vidmem {
  void* winHost;        /* the library's host object for this window */
  char* lsaFlatBase;    /* LSA rank 0's copy; rank r's is stride4G * 4 GiB further */
  int lsaRank;          /* the owner's rank in its LSA team */
  int worldRank;        /* the owner's rank in the communicator */
  uint32_t stride4G;    /* distance between consecutive LSA ranks' copies, in 4 GiB units */
  uint32_t mcOffset4K;  /* the window's offset in its multicast object, in 4 KiB units */
  uint32_t ginOffset4K; /* the window's offset in its GIN registration, in 4 KiB units */
  uint32_t winFlags;    /* NCCL_WIN_* flags it was registered with */
  ncclGinWindow_t ginWinsDefaultBackend[NCCL_GIN_MAX_CONNECTIONS];
  struct ncclSegmentWindow* ginMultiSegmentWins;
  int numSegments;
  int cftFlatRank;
  ncclCftLeId_t ucLeIdBase;
};
typedef struct ncclWindow_vidmem ncclWindow_vidmem_t;

/* The addressing part of the resource window, copied into ncclDevComm. */
typedef struct ncclResourceWindow_vidmem {
  char* lsaFlatBase;
  uint32_t stride4G;
  uint32_t mcOffset4K;
} ncclResourceWindow_vidmem_t;

/* The communicator's registered windows, for ncclFindWindow: 32 (base, size, window) entries per
 * block, blocks chained through `next`; an entry with a zero field is unused. */
#ifdef __cplusplus
struct ncclDevCommWindowTable {
  struct Entry {
    uintptr_t base, size;
    ncclWindow_t window;
  } entries[32];
  struct ncclDevCommWindowTable* next;
};
#endif
typedef struct ncclDevCommWindowTable* ncclDevCommWindowTable_t;

/* The device communicator (NCCL 2.32.3 layout). */
struct ncclDevComm {
  unsigned int magic;   /* NCCL_API_MAGIC */
  unsigned int version; /* the NCCL_VERSION_CODE the requirements were compiled with */

  int rank, nRanks; /* in the communicator (the world team) */
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize; /* in this rank's LSA team */
  uint32_t lsaSize_rcp32;

  ncclDevCommWindowTable_t windowTable;

  ncclWindow_t resourceWindow; /* barriers, LL all-to-all buffers, user resource buffers */
  ncclResourceWindow_vidmem_t resourceWindow_inlined;

  ncclGinBarrierHandle_t hybridDenseGinBarrier;

  ncclMultimemHandle_t lsaMultimem; /* mcBasePtr NULL: no multicast (always so on Braid) */
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;

  uint8_t ginConnectionCount; /* 0: no GIN */
  uint8_t backendIndex;
  uint8_t ginNetDeviceTypes[NCCL_GIN_MAX_CONNECTIONS];
  void* ginHandles[NCCL_GIN_MAX_CONNECTIONS];
  int ginSignalCount;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
  uint32_t ginContextCount;
  int ginConnectionStride;
  int ginContextStride;
  bool ginStrongLegacySignals;

  uint32_t* abortFlag; /* non-zero once the communicator is aborted; NULL: never */

  ncclLsaBarrierHandle_t hybridLsaBarrier;
  ncclGinBarrierHandle_t hybridRailGinBarrier;

  ncclGinBarrierHandle_t worldGinBarrier;
  uint32_t ginConnectionStride_rcp32;

  int cftRank, cftSize;
  int cftMultimemRank, cftMultimemSize;
  uint32_t cftMultimemSize_rcp32;
  ncclCftLeId ucLeId;
  ncclCftLeId mcLeId;
  ncclCftBarrierHandle_t cftBarrier;
  ncclCftBarrierHandle_t cftMultimemBarrier;
};

#ifdef __cplusplus
/* Tags that name a communicator's built-in teams in session constructors. */
struct ncclTeamTagWorld {};
struct ncclTeamTagLsa {};
struct ncclTeamTagRail {};
#endif

#endif /* NCCL_DEVICE_COMM_H_ */
