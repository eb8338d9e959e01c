/*
 * nccl.h -- public interface of Braid, a from-scratch implementation of the NCCL API.
 *
 * This header declares every function, enum value, struct layout and initializer of NVIDIA NCCL
 * 2.32.3's nccl.h, so that a program compiled against NCCL's header runs on Braid's libnccl.so.2
 * unchanged (and the reverse); tests/abi checks this against NVIDIA's header. What Braid does not
 * implement yet (symmetric memory windows, one-sided RMA, the device API, CFT and GIN) fails with
 * a WARN naming the missing feature.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if __cplusplus && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif

/* The NCCL API version this header implements. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 32
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 23203
/* Version encoding: two digits for the minor up to 2.8, then a wider minor field. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

#include <limits.h>
#include <stdint.h>

/* Opaque handles. */
typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

/* The rendezvous token every rank of a communicator receives from the rank that created it. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* Result codes. ncclGetErrorString() turns them into text. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f
/* The magic of every versioned struct below (config, collective config, encryption config). */
#define NCCL_API_MAGIC 0xcafebeef

/* Flags of ncclCommWindowRegister. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_GIN_ONLY 0x04
#define NCCL_WIN_CFT_COUNTED 0x08
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* Values of ncclConfig_t.CTAPolicy. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* Flags of ncclCommShrink: DEFAULT shrinks a healthy communicator; ABORT first stops what the
 * parent still has in flight (use it when the excluded ranks are dead). */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* Flags of ncclCommRevoke; must be 0 for now. */
#define NCCL_REVOKE_DEFAULT 0x00

/* Values of ncclConfig_t.hostCftMode (Compute Fabric Transport, Blackwell and later). */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Values of ncclConfig_t.nvlsHostMode: which host-side NVLink SHARP components may be used. */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX,
} ncclNvlsHostMode_t;

/* Communicator options. Start from NCCL_CONFIG_INITIALIZER and set only what you need; fields left
 * at their UNDEF value take the library default (or the matching NCCL_* environment variable).
 * The library reads `size` and `version`, so programs built against older layouts (48, 80, 88 and
 * 96 bytes) keep working. */
typedef struct ncclConfig_v23100 {
  size_t size;             /* sizeof(ncclConfig_t) of the caller */
  unsigned int magic;      /* NCCL_API_MAGIC */
  unsigned int version;    /* NCCL_VERSION_CODE of the caller's header */
  int blocking;            /* 1: calls block until done; 0: they may return ncclInProgress */
  int cgaClusterSize;      /* thread-block cluster size on sm90+ (0-8) */
  int minCTAs;             /* lower bound on CTAs (channels) per operation */
  int maxCTAs;             /* upper bound on CTAs (channels) per operation */
  const char* netName;     /* network module to use, e.g. "Socket" */
  int splitShare;          /* children of ncclCommSplit share the parent's resources */
  int trafficClass;        /* network traffic class */
  const char* commName;    /* name shown in logs */
  int collnetEnable;       /* allow CollNet algorithms */
  int CTAPolicy;           /* NCCL_CTA_POLICY_* */
  int shrinkShare;         /* children of ncclCommShrink share the parent's resources */
  int nvlsCTAs;            /* CTAs for NVLink SHARP algorithms */
  int nChannelsPerNetPeer; /* P2P channels per network peer (1-64) */
  int nvlinkCentricSched;  /* NVLink-centric scheduling */
  int graphUsageMode;      /* how the communicator is used with CUDA graphs (2.29) */
  int numRmaCtx;           /* one-sided (RMA) contexts (2.29) */
  int maxP2pPeers;         /* bound on the peers one rank exchanges point-to-point with (2.30) */
  int graphStreamOrdering; /* ordering of captured work across streams (2.30.7) */
  int launchOrderImplicit; /* launches of different communicators ordered by the host (2.31) */
  int numRmaSig;           /* one-sided signals per context (2.31) */
  int rmaEagerInit;        /* set up one-sided connections at init instead of first use (2.31) */
  int hostCftMode;         /* ncclHostCftMode_t (2.31) */
  int nvlsHostMode;        /* ncclNvlsHostMode_t (2.31) */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                          \
  {                                                      \
    sizeof(ncclConfig_t),      /* size */                \
        NCCL_API_MAGIC,        /* magic */               \
        NCCL_VERSION_CODE,     /* version */             \
        NCCL_CONFIG_UNDEF_INT, /* blocking */            \
        NCCL_CONFIG_UNDEF_INT, /* cgaClusterSize */      \
        NCCL_CONFIG_UNDEF_INT, /* minCTAs */             \
        NCCL_CONFIG_UNDEF_INT, /* maxCTAs */             \
        NCCL_CONFIG_UNDEF_PTR, /* netName */             \
        NCCL_CONFIG_UNDEF_INT, /* splitShare */          \
        NCCL_CONFIG_UNDEF_INT, /* trafficClass */        \
        NCCL_CONFIG_UNDEF_PTR, /* commName */            \
        NCCL_CONFIG_UNDEF_INT, /* collnetEnable */       \
        NCCL_CONFIG_UNDEF_INT, /* CTAPolicy */           \
        NCCL_CONFIG_UNDEF_INT, /* shrinkShare */         \
        NCCL_CONFIG_UNDEF_INT, /* nvlsCTAs */            \
        NCCL_CONFIG_UNDEF_INT, /* nChannelsPerNetPeer */ \
        NCCL_CONFIG_UNDEF_INT, /* nvlinkCentricSched */  \
        NCCL_CONFIG_UNDEF_INT, /* graphUsageMode */      \
        NCCL_CONFIG_UNDEF_INT, /* numRmaCtx */           \
        NCCL_CONFIG_UNDEF_INT, /* maxP2pPeers */         \
        NCCL_CONFIG_UNDEF_INT, /* graphStreamOrdering */ \
        NCCL_CONFIG_UNDEF_INT, /* launchOrderImplicit */ \
        NCCL_CONFIG_UNDEF_INT, /* numRmaSig */           \
        NCCL_CONFIG_UNDEF_INT, /* rmaEagerInit */        \
        NCCL_CONFIG_UNDEF_INT, /* hostCftMode */         \
        NCCL_CONFIG_UNDEF_INT, /* nvlsHostMode */        \
  }

/* A vendor's option for ncclCollConfig_t.ext: a key and a value, in a NULL-terminated list. Braid,
 * like NCCL, reads none of them. */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next;
  struct {
    int vendorId;
    int optionId;
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val;
} ncclConfigExt_t;

/* Options of one collective call (ncclAllReduceConfig and its siblings). Start from
 * NCCL_COLLCONFIG_INITIALIZER; UNDEF fields take the communicator's setting. Every rank must pass
 * the same values (only the local rank's are checked). */
typedef struct ncclCollConfig_v23200 {
  size_t size;                       /* sizeof(ncclCollConfig_t) of the caller */
  unsigned int magic;                /* NCCL_API_MAGIC */
  unsigned int version;              /* NCCL_VERSION_CODE of the caller's header */
  ncclConfigExt_t* ext;              /* vendor options, ignored */
  int minCTAs;                       /* lower bound on CTAs (channels) of this call */
  int maxCTAs;                       /* upper bound, at most the communicator's maxCTAs */
  int nvlsCTAs;                      /* CTAs of NVLink SHARP algorithms */
  int cgaClusterSize;                /* thread-block cluster size (0-8); keep it equal within a group */
  const char* algSelection;          /* "ring", "tree_ll,ring_simple", "^tree"...; NULL/"": any */
  int forceAlgSelection;             /* 1 (default): a selection that leaves no algorithm is an error */
  int CTAPolicy;                     /* NCCL_CTA_POLICY_*; UNDEF: the communicator's */
  uint64_t userProfilerTag;          /* passed to profiler plugins unchanged */
  cudaEvent_t launchCompletionEvent; /* recorded once this call's kernel launch has completed */
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                        \
  {                                                        \
    sizeof(ncclCollConfig_t),  /* size */                  \
        NCCL_API_MAGIC,        /* magic */                 \
        NCCL_VERSION_CODE,     /* version */               \
        NCCL_CONFIG_UNDEF_PTR, /* ext */                   \
        NCCL_CONFIG_UNDEF_INT, /* minCTAs */               \
        NCCL_CONFIG_UNDEF_INT, /* maxCTAs */               \
        NCCL_CONFIG_UNDEF_INT, /* nvlsCTAs */              \
        NCCL_CONFIG_UNDEF_INT, /* cgaClusterSize */        \
        NCCL_CONFIG_UNDEF_PTR, /* algSelection */          \
        1,                     /* forceAlgSelection */     \
        NCCL_CONFIG_UNDEF_INT, /* CTAPolicy */             \
        0,                     /* userProfilerTag */       \
        NCCL_CONFIG_UNDEF_PTR, /* launchCompletionEvent */ \
  }

/* Filled by ncclGroupSimulateEnd: the cost model's estimate of the group, in microseconds. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER              \
  {                                            \
    sizeof(ncclSimInfo_t), /* size */          \
        0x74685283,        /* magic */         \
        NCCL_VERSION_CODE, /* version */       \
        NCCL_UNDEF_FLOAT   /* estimatedTime */ \
  }

/*
 * Every function below exists twice: ncclX (a weak symbol, so a profiling tool may interpose it)
 * and pncclX (always the library's own implementation).
 */

/* Memory that is ready for registration and peer mapping (cuMem VMM when available). */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* NCCL_VERSION_CODE of the library. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* Create the token for ncclCommInitRank; call it on one rank and pass it to all others. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* Communicator creation. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Communicator teardown: Finalize flushes outstanding work, Destroy frees, Abort stops at once. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* New communicators from an existing one. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags);

/* Growing: a coordinating rank of `comm` makes an id with ncclCommGetUniqueId and hands it to the
 * joining ranks out of band. Every existing rank calls ncclCommGrow(comm, nRanks, NULL or the id,
 * -1, ...) and keeps its rank; each joining rank calls ncclCommGrow(NULL, nRanks, &id, rank, ...)
 * with a rank from comm's size up. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config);

/* Creation from several unique ids (several bootstrap roots), for very large jobs. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config);

/* Errors. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);
/* The text of the last WARN (process wide; comm is ignored). */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Re-read NCCL_DEBUG* on the next log line. Deprecated; as in NCCL's header, it is declared only
 * where NCCL_OS_LINUX is defined, and is otherwise a macro that does nothing. */
#ifdef NCCL_OS_LINUX
__attribute__((deprecated("ncclResetDebugInit is not supported as part of the NCCL API and will be removed"))) void
ncclResetDebugInit();
__attribute__((deprecated("pncclResetDebugInit is not supported as part of the NCCL API and will be removed"))) void
pncclResetDebugInit();
#else
#define ncclResetDebugInit()
#define pncclResetDebugInit()
#endif

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

/* Communicator queries. */
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* User buffer registration. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Suspend releases the communicator's device memory (flag NCCL_SUSPEND_MEM) until Resume; both are
 * collective. */
#define NCCL_SUSPEND_MEM 0x01
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);

/* What ncclCommMemStats reports. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* bytes of device memory that suspend releases */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* bytes of device memory that stay while suspended */
  ncclStatGpuMemTotal = 3      /* all device memory the communicator holds, in bytes */
} ncclCommMemStat_t;
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

/* Symmetric memory windows. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

/* Reduction operations. The dummy enum sizes ncclMaxRedOp to the largest value an enum of this
 * size can hold (INT_MAX for the usual 4-byte enums). */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  /* First value handed out by ncclRedOpCreatePreMulSum. */
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/* Element types. */
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives. */
typedef enum {
  /* A device pointer, read when the operation runs. */
  ncclScalarDevice = 0,
  /* A host pointer, read before ncclRedOpCreatePreMulSum returns. */
  ncclScalarHostImmediate = 1
} ncclScalarResidence_t;

/* A reduction that multiplies every input by `scalar` before summing. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/*
 * Collectives. All are asynchronous to the host and ordered on `stream`. In-place operation:
 * sendbuff == recvbuff, except AllGather (sendbuff == recvbuff + rank * sendcount) and
 * ReduceScatter (recvbuff == sendbuff + rank * recvcount).
 */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream);
/* In-place broadcast; kept for compatibility. */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream);

/* The collectives again, with the options of one call (NULL: exactly the call above). */
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                              const ncclCollConfig_t* config);
ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                               const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                     const ncclCollConfig_t* config);
ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                      const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);

/* Point-to-point. A send and its receive must progress together: group them, or post the
 * receive before the send blocks the GPU. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);

/* One-sided: write `count` elements of `localbuff` into peer's window at an offset, then raise
 * signal `sigIdx` of context `ctx` there; ncclSignal raises the signal alone; ncclWaitSignal waits
 * until each described peer has raised its signal `opCnt` times. All ordered on `stream`. */
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
typedef struct {
  int opCnt;  /* signals to wait for */
  int peer;   /* the rank that raises them */
  int sigIdx; /* which signal */
  int ctx;    /* of which context */
} ncclWaitSignalDesc_t;
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);

/* Groups: operations between Start and End are launched together at the outermost End. */
ncclResult_t ncclGroupStart();
ncclResult_t pncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t pncclGroupEnd();
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* Encryption of the library's own TCP sockets, process wide. */
typedef enum {
  NCCL_ENCRYPTION_MODE_NONE = 0, /* plain text */
  NCCL_ENCRYPTION_MODE_PSK = 1   /* TLS with a pre-shared key */
} ncclEncryptionMode_t;
typedef struct ncclEncryptionConfig_v23200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int mode;        /* ncclEncryptionMode_t */
  const char* psk; /* the key, for NCCL_ENCRYPTION_MODE_PSK */
} ncclEncryptionConfig_t;
#define NCCL_ENCRYPTION_CONFIG_INITIALIZER        \
  {                                               \
    sizeof(ncclEncryptionConfig_t), /* size */    \
        NCCL_API_MAGIC,             /* magic */   \
        NCCL_VERSION_CODE,          /* version */ \
        NCCL_ENCRYPTION_MODE_NONE,  /* mode */    \
        NCCL_CONFIG_UNDEF_PTR,      /* psk */     \
  }
ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config);
ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config);

/* Read-only access to the live value of any NCCL_* parameter (environment, config file or
 * communicator default). A handle stays valid for the life of the library; strings returned stay
 * valid until the same thread's next call. */
typedef struct ncclParamHandle* ncclParamHandle_t;
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
