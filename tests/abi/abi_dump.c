/*
 * abi_dump -- prints every ABI fact of an nccl.h (NCCL 2.32.3's API), one `key value` line each:
 * enum values, macro constants, sizes, alignments, offsets and types of struct fields (with the
 * struct tags), the value of every field each initializer produces and (C++ only) the type of every
 * function.
 *
 * abi_compare.sh builds this source against Braid's nccl.h and NVIDIA's, in C and in C++
 * (abi_dump_cxx.cc includes this file), and diffs the outputs. The header to read comes in as
 * ABI_NCCL_H, an absolute path, so the include search order cannot pick the wrong one (CUDA's
 * include folder may hold another nccl.h). Build with -DNCCL_OS_LINUX: NVIDIA's header declares
 * ncclResetDebugInit only then (Braid's always does), as NVIDIA's own Linux build sees it.
 */
#ifndef ABI_NCCL_H
#error "build with -DABI_NCCL_H=\"/path/to/nccl.h\""
#endif
#include ABI_NCCL_H

#include "abi_dump_common.h"
#include "abi_functions.h"

/* ncclResetDebugInit is declared deprecated by both headers; naming it here is intended. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

static void dumpResultAndTypeEnums(void) {
  PRINT_SIZE(ncclResult_t);
  PRINT_ENUM(ncclSuccess);
  PRINT_ENUM(ncclUnhandledCudaError);
  PRINT_ENUM(ncclSystemError);
  PRINT_ENUM(ncclInternalError);
  PRINT_ENUM(ncclInvalidArgument);
  PRINT_ENUM(ncclInvalidUsage);
  PRINT_ENUM(ncclRemoteError);
  PRINT_ENUM(ncclInProgress);
  PRINT_ENUM(ncclTimeout);
  PRINT_ENUM(ncclNumResults);

  PRINT_SIZE(ncclDataType_t);
  PRINT_ENUM(ncclInt8);
  PRINT_ENUM(ncclChar);
  PRINT_ENUM(ncclUint8);
  PRINT_ENUM(ncclInt32);
  PRINT_ENUM(ncclInt);
  PRINT_ENUM(ncclUint32);
  PRINT_ENUM(ncclInt64);
  PRINT_ENUM(ncclUint64);
  PRINT_ENUM(ncclFloat16);
  PRINT_ENUM(ncclHalf);
  PRINT_ENUM(ncclFloat32);
  PRINT_ENUM(ncclFloat);
  PRINT_ENUM(ncclFloat64);
  PRINT_ENUM(ncclDouble);
  PRINT_ENUM(ncclBfloat16);
  PRINT_ENUM(ncclFloat8e4m3);
  PRINT_ENUM(ncclFloat8e5m2);
  PRINT_ENUM(ncclNumTypes);

  PRINT_SIZE(ncclRedOp_dummy_t);
  PRINT_ENUM(ncclNumOps_dummy);
  PRINT_SIZE(ncclRedOp_t);
  PRINT_ENUM(ncclSum);
  PRINT_ENUM(ncclProd);
  PRINT_ENUM(ncclMax);
  PRINT_ENUM(ncclMin);
  PRINT_ENUM(ncclAvg);
  PRINT_ENUM(ncclNumOps);
  PRINT_ENUM(ncclMaxRedOp);

  PRINT_SIZE(ncclScalarResidence_t);
  PRINT_ENUM(ncclScalarDevice);
  PRINT_ENUM(ncclScalarHostImmediate);
}

/* The enums that came after 2.28: config modes, memory statistics, encryption. */
static void dumpNewerEnums(void) {
  PRINT_SIZE(ncclHostCftMode_t);
  PRINT_ENUM(ncclHostCftDefault);
  PRINT_ENUM(ncclHostCftEnable);
  PRINT_ENUM(ncclHostCftDisable);
  PRINT_ENUM(ncclHostCftFallback);

  PRINT_SIZE(ncclNvlsHostMode_t);
  PRINT_ENUM(ncclNvlsHostModeDefault);
  PRINT_ENUM(ncclNvlsHostModeEnable);
  PRINT_ENUM(ncclNvlsHostModeDisableTransport);
  PRINT_ENUM(ncclNvlsHostModeDisableSymmetricMultimem);
  PRINT_ENUM(ncclNvlsHostModeDisable);

  PRINT_SIZE(ncclCommMemStat_t);
  PRINT_ENUM(ncclStatGpuMemSuspend);
  PRINT_ENUM(ncclStatGpuMemSuspended);
  PRINT_ENUM(ncclStatGpuMemPersist);
  PRINT_ENUM(ncclStatGpuMemTotal);

  PRINT_SIZE(ncclEncryptionMode_t);
  PRINT_ENUM(NCCL_ENCRYPTION_MODE_NONE);
  PRINT_ENUM(NCCL_ENCRYPTION_MODE_PSK);
}

static void dumpVersionMacros(void) {
#ifdef NCCL_MAJOR
  PRINT_INT_MACRO(NCCL_MAJOR);
#else
  PRINT_MACRO_UNDEFINED("NCCL_MAJOR");
#endif
#ifdef NCCL_MINOR
  PRINT_INT_MACRO(NCCL_MINOR);
#else
  PRINT_MACRO_UNDEFINED("NCCL_MINOR");
#endif
#ifdef NCCL_PATCH
  PRINT_INT_MACRO(NCCL_PATCH);
#else
  PRINT_MACRO_UNDEFINED("NCCL_PATCH");
#endif
#ifdef NCCL_SUFFIX
  printf("macro.NCCL_SUFFIX \"%s\"\n", NCCL_SUFFIX);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SUFFIX");
#endif
#ifdef NCCL_VERSION_CODE
  PRINT_INT_MACRO(NCCL_VERSION_CODE);
#else
  PRINT_MACRO_UNDEFINED("NCCL_VERSION_CODE");
#endif
#ifdef NCCL_VERSION
  PRINT_INT("macro.NCCL_VERSION(NCCL_MAJOR,NCCL_MINOR,NCCL_PATCH)", NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  PRINT_INT("macro.NCCL_VERSION(2,32,3)", NCCL_VERSION(2, 32, 3));
  PRINT_INT("macro.NCCL_VERSION(2,28,9)", NCCL_VERSION(2, 28, 9));
  PRINT_INT("macro.NCCL_VERSION(2,25,1)", NCCL_VERSION(2, 25, 1));
  PRINT_INT("macro.NCCL_VERSION(2,9,0)", NCCL_VERSION(2, 9, 0));
  PRINT_INT("macro.NCCL_VERSION(2,8,4)", NCCL_VERSION(2, 8, 4));
  PRINT_INT("macro.NCCL_VERSION(2,7,8)", NCCL_VERSION(2, 7, 8));
  PRINT_INT("macro.NCCL_VERSION(1,9,3)", NCCL_VERSION(1, 9, 3));
  PRINT_INT("macro.NCCL_VERSION(3,0,0)", NCCL_VERSION(3, 0, 0));
  PRINT_INT("macro.NCCL_VERSION(3,1,2)", NCCL_VERSION(3, 1, 2));
#else
  PRINT_MACRO_UNDEFINED("NCCL_VERSION");
#endif
}

static void dumpValueMacros(void) {
#ifdef NCCL_UNIQUE_ID_BYTES
  PRINT_INT_MACRO(NCCL_UNIQUE_ID_BYTES);
#else
  PRINT_MACRO_UNDEFINED("NCCL_UNIQUE_ID_BYTES");
#endif
#ifdef NCCL_COMM_NULL
  printf("macro.NCCL_COMM_NULL %s\n", (NCCL_COMM_NULL) == 0 ? "null" : "non-null");
#else
  PRINT_MACRO_UNDEFINED("NCCL_COMM_NULL");
#endif
#ifdef NCCL_CONFIG_UNDEF_INT
  PRINT_INT_MACRO(NCCL_CONFIG_UNDEF_INT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CONFIG_UNDEF_INT");
#endif
#ifdef NCCL_CONFIG_UNDEF_PTR
  printf("macro.NCCL_CONFIG_UNDEF_PTR %s\n", (NCCL_CONFIG_UNDEF_PTR) == 0 ? "null" : "non-null");
#else
  PRINT_MACRO_UNDEFINED("NCCL_CONFIG_UNDEF_PTR");
#endif
#ifdef NCCL_SPLIT_NOCOLOR
  PRINT_INT_MACRO(NCCL_SPLIT_NOCOLOR);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SPLIT_NOCOLOR");
#endif
#ifdef NCCL_UNDEF_FLOAT
  printf("macro.NCCL_UNDEF_FLOAT %a (type %s)\n", (double)(NCCL_UNDEF_FLOAT), ABI_TYPE_NAME(NCCL_UNDEF_FLOAT));
#else
  PRINT_MACRO_UNDEFINED("NCCL_UNDEF_FLOAT");
#endif
#ifdef NCCL_API_MAGIC
  PRINT_INT_MACRO(NCCL_API_MAGIC);
#else
  PRINT_MACRO_UNDEFINED("NCCL_API_MAGIC");
#endif
#ifdef NCCL_SUSPEND_MEM
  PRINT_INT_MACRO(NCCL_SUSPEND_MEM);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SUSPEND_MEM");
#endif
}

static void dumpFlagMacros(void) {
#ifdef NCCL_WIN_DEFAULT
  PRINT_INT_MACRO(NCCL_WIN_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_DEFAULT");
#endif
#ifdef NCCL_WIN_COLL_SYMMETRIC
  PRINT_INT_MACRO(NCCL_WIN_COLL_SYMMETRIC);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_COLL_SYMMETRIC");
#endif
#ifdef NCCL_WIN_STRICT_ORDERING
  PRINT_INT_MACRO(NCCL_WIN_STRICT_ORDERING);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_STRICT_ORDERING");
#endif
#ifdef NCCL_WIN_GIN_ONLY
  PRINT_INT_MACRO(NCCL_WIN_GIN_ONLY);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_GIN_ONLY");
#endif
#ifdef NCCL_WIN_CFT_COUNTED
  PRINT_INT_MACRO(NCCL_WIN_CFT_COUNTED);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_CFT_COUNTED");
#endif
#ifdef NCCL_WIN_REQUIRED_ALIGNMENT
  PRINT_INT_MACRO(NCCL_WIN_REQUIRED_ALIGNMENT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_REQUIRED_ALIGNMENT");
#endif
#ifdef NCCL_CTA_POLICY_DEFAULT
  PRINT_INT_MACRO(NCCL_CTA_POLICY_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CTA_POLICY_DEFAULT");
#endif
#ifdef NCCL_CTA_POLICY_EFFICIENCY
  PRINT_INT_MACRO(NCCL_CTA_POLICY_EFFICIENCY);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CTA_POLICY_EFFICIENCY");
#endif
#ifdef NCCL_CTA_POLICY_ZERO
  PRINT_INT_MACRO(NCCL_CTA_POLICY_ZERO);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CTA_POLICY_ZERO");
#endif
#ifdef NCCL_SHRINK_DEFAULT
  PRINT_INT_MACRO(NCCL_SHRINK_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SHRINK_DEFAULT");
#endif
#ifdef NCCL_SHRINK_ABORT
  PRINT_INT_MACRO(NCCL_SHRINK_ABORT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SHRINK_ABORT");
#endif
#ifdef NCCL_REVOKE_DEFAULT
  PRINT_INT_MACRO(NCCL_REVOKE_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_REVOKE_DEFAULT");
#endif
}

/* ncclConfig_t: all 120 bytes of fields. The struct tag is part of the ABI (C++ mangles it into
 * every signature that takes the config): NCCL names it after the release that set the layout. */
static void dumpConfig(void) {
  PRINT_SIZE(ncclConfig_t);
  PRINT_STRUCT_SIZE(ncclConfig_v23100);
  PRINT_FIELD(ncclConfig_t, size);
  PRINT_FIELD(ncclConfig_t, magic);
  PRINT_FIELD(ncclConfig_t, version);
  PRINT_FIELD(ncclConfig_t, blocking);
  PRINT_FIELD(ncclConfig_t, cgaClusterSize);
  PRINT_FIELD(ncclConfig_t, minCTAs);
  PRINT_FIELD(ncclConfig_t, maxCTAs);
  PRINT_FIELD(ncclConfig_t, netName);
  PRINT_FIELD(ncclConfig_t, splitShare);
  PRINT_FIELD(ncclConfig_t, trafficClass);
  PRINT_FIELD(ncclConfig_t, commName);
  PRINT_FIELD(ncclConfig_t, collnetEnable);
  PRINT_FIELD(ncclConfig_t, CTAPolicy);
  PRINT_FIELD(ncclConfig_t, shrinkShare);
  PRINT_FIELD(ncclConfig_t, nvlsCTAs);
  PRINT_FIELD(ncclConfig_t, nChannelsPerNetPeer);
  PRINT_FIELD(ncclConfig_t, nvlinkCentricSched);
  PRINT_FIELD(ncclConfig_t, graphUsageMode);
  PRINT_FIELD(ncclConfig_t, numRmaCtx);
  PRINT_FIELD(ncclConfig_t, maxP2pPeers);
  PRINT_FIELD(ncclConfig_t, graphStreamOrdering);
  PRINT_FIELD(ncclConfig_t, launchOrderImplicit);
  PRINT_FIELD(ncclConfig_t, numRmaSig);
  PRINT_FIELD(ncclConfig_t, rmaEagerInit);
  PRINT_FIELD(ncclConfig_t, hostCftMode);
  PRINT_FIELD(ncclConfig_t, nvlsHostMode);
}

/* The per-collective config and the vendor extension list it points to. */
static void dumpCollConfig(void) {
  PRINT_SIZE(ncclConfigExt_t);
  PRINT_STRUCT_SIZE(ncclConfigExt);
  PRINT_FIELD(ncclConfigExt_t, next);
  PRINT_FIELD(ncclConfigExt_t, key);
  PRINT_FIELD(ncclConfigExt_t, key.vendorId);
  PRINT_FIELD(ncclConfigExt_t, key.optionId);
  PRINT_FIELD(ncclConfigExt_t, val);
  PRINT_FIELD(ncclConfigExt_t, val.i);
  PRINT_FIELD(ncclConfigExt_t, val.s);
  PRINT_FIELD(ncclConfigExt_t, val.raw);

  PRINT_SIZE(ncclCollConfig_t);
  PRINT_STRUCT_SIZE(ncclCollConfig_v23200);
  PRINT_FIELD(ncclCollConfig_t, size);
  PRINT_FIELD(ncclCollConfig_t, magic);
  PRINT_FIELD(ncclCollConfig_t, version);
  PRINT_FIELD(ncclCollConfig_t, ext);
  PRINT_FIELD(ncclCollConfig_t, minCTAs);
  PRINT_FIELD(ncclCollConfig_t, maxCTAs);
  PRINT_FIELD(ncclCollConfig_t, nvlsCTAs);
  PRINT_FIELD(ncclCollConfig_t, cgaClusterSize);
  PRINT_FIELD(ncclCollConfig_t, algSelection);
  PRINT_FIELD(ncclCollConfig_t, forceAlgSelection);
  PRINT_FIELD(ncclCollConfig_t, CTAPolicy);
  PRINT_FIELD(ncclCollConfig_t, userProfilerTag);
  PRINT_FIELD(ncclCollConfig_t, launchCompletionEvent);
}

static void dumpOtherStructs(void) {
  PRINT_SIZE(ncclComm_t);
  PRINT_SIZE(ncclWindow_t);
  PRINT_SIZE(ncclParamHandle_t);

  PRINT_SIZE(ncclUniqueId);
  PRINT_FIELD(ncclUniqueId, internal);

  PRINT_SIZE(ncclSimInfo_t);
  PRINT_STRUCT_SIZE(ncclSimInfo_v22200);
  PRINT_FIELD(ncclSimInfo_t, size);
  PRINT_FIELD(ncclSimInfo_t, magic);
  PRINT_FIELD(ncclSimInfo_t, version);
  PRINT_FIELD(ncclSimInfo_t, estimatedTime);

  PRINT_SIZE(ncclEncryptionConfig_t);
  PRINT_STRUCT_SIZE(ncclEncryptionConfig_v23200);
  PRINT_FIELD(ncclEncryptionConfig_t, size);
  PRINT_FIELD(ncclEncryptionConfig_t, magic);
  PRINT_FIELD(ncclEncryptionConfig_t, version);
  PRINT_FIELD(ncclEncryptionConfig_t, mode);
  PRINT_FIELD(ncclEncryptionConfig_t, psk);

  PRINT_SIZE(ncclWaitSignalDesc_t);
  PRINT_FIELD(ncclWaitSignalDesc_t, opCnt);
  PRINT_FIELD(ncclWaitSignalDesc_t, peer);
  PRINT_FIELD(ncclWaitSignalDesc_t, sigIdx);
  PRINT_FIELD(ncclWaitSignalDesc_t, ctx);
}

static void dumpConfigInitializer(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  const char* c = "init.NCCL_CONFIG_INITIALIZER";
  PRINT_INT_FIELD(c, config, size);
  PRINT_HEX_FIELD(c, config, magic);
  PRINT_INT_FIELD(c, config, version);
  PRINT_INT_FIELD(c, config, blocking);
  PRINT_INT_FIELD(c, config, cgaClusterSize);
  PRINT_INT_FIELD(c, config, minCTAs);
  PRINT_INT_FIELD(c, config, maxCTAs);
  PRINT_PTR_FIELD(c, config, netName);
  PRINT_INT_FIELD(c, config, splitShare);
  PRINT_INT_FIELD(c, config, trafficClass);
  PRINT_PTR_FIELD(c, config, commName);
  PRINT_INT_FIELD(c, config, collnetEnable);
  PRINT_INT_FIELD(c, config, CTAPolicy);
  PRINT_INT_FIELD(c, config, shrinkShare);
  PRINT_INT_FIELD(c, config, nvlsCTAs);
  PRINT_INT_FIELD(c, config, nChannelsPerNetPeer);
  PRINT_INT_FIELD(c, config, nvlinkCentricSched);
  PRINT_INT_FIELD(c, config, graphUsageMode);
  PRINT_INT_FIELD(c, config, numRmaCtx);
  PRINT_INT_FIELD(c, config, maxP2pPeers);
  PRINT_INT_FIELD(c, config, graphStreamOrdering);
  PRINT_INT_FIELD(c, config, launchOrderImplicit);
  PRINT_INT_FIELD(c, config, numRmaSig);
  PRINT_INT_FIELD(c, config, rmaEagerInit);
  PRINT_INT_FIELD(c, config, hostCftMode);
  PRINT_INT_FIELD(c, config, nvlsHostMode);
}

static void dumpOtherInitializers(void) {
  ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
  const char* k = "init.NCCL_COLLCONFIG_INITIALIZER";
  PRINT_INT_FIELD(k, coll, size);
  PRINT_HEX_FIELD(k, coll, magic);
  PRINT_INT_FIELD(k, coll, version);
  PRINT_PTR_FIELD(k, coll, ext);
  PRINT_INT_FIELD(k, coll, minCTAs);
  PRINT_INT_FIELD(k, coll, maxCTAs);
  PRINT_INT_FIELD(k, coll, nvlsCTAs);
  PRINT_INT_FIELD(k, coll, cgaClusterSize);
  PRINT_PTR_FIELD(k, coll, algSelection);
  PRINT_INT_FIELD(k, coll, forceAlgSelection);
  PRINT_INT_FIELD(k, coll, CTAPolicy);
  PRINT_HEX_FIELD(k, coll, userProfilerTag);
  PRINT_PTR_FIELD(k, coll, launchCompletionEvent);

  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  const char* s = "init.NCCL_SIM_INFO_INITIALIZER";
  PRINT_INT_FIELD(s, sim, size);
  PRINT_HEX_FIELD(s, sim, magic);
  PRINT_INT_FIELD(s, sim, version);
  printf("%s.estimatedTime %a\n", s, (double)sim.estimatedTime);

  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  const char* e = "init.NCCL_ENCRYPTION_CONFIG_INITIALIZER";
  PRINT_INT_FIELD(e, enc, size);
  PRINT_HEX_FIELD(e, enc, magic);
  PRINT_INT_FIELD(e, enc, version);
  PRINT_INT_FIELD(e, enc, mode);
  PRINT_PTR_FIELD(e, enc, psk);
}

#define ABI_COUNT_ONE(name) +1
static void dumpFunctionList(void) {
  /* The names themselves are in the list; the header must declare each (or this does not build). */
#define ABI_PRINT_NAME(name)                                                     \
  printf("function.nccl%s declared\nfunction.pnccl%s declared\n", #name, #name); \
  (void)&nccl##name;                                                             \
  (void)&pnccl##name;
  NCCL_ABI_HEADER_FUNCTIONS(ABI_PRINT_NAME)
#undef ABI_PRINT_NAME
  printf("function.count %d\n", 0 NCCL_ABI_HEADER_FUNCTIONS(ABI_COUNT_ONE));
}

#ifdef __cplusplus
/* The function type's mangled name encodes every parameter and the return type, including the
 * struct tags behind the typedefs, so any signature difference between two headers shows up. */
static void dumpSignatures() {
#define ABI_PRINT_SIG(fn)                                      \
  printf("cxx.sig.nccl%s %s\n", #fn, typeid(nccl##fn).name()); \
  printf("cxx.sig.pnccl%s %s\n", #fn, typeid(pnccl##fn).name());
  NCCL_ABI_HEADER_FUNCTIONS(ABI_PRINT_SIG)
#undef ABI_PRINT_SIG
}

static void dumpTypeNames() {
#define ABI_PRINT_TYPE(type) printf("cxx.type.%s %s\n", #type, ABI_MANGLED(type));
#define ABI_PRINT_ENUM_TYPE(type) \
  ABI_PRINT_TYPE(type)            \
  printf("cxx.enum_underlying.%s %s\n", #type, ABI_MANGLED(std::underlying_type_t<type>));
  ABI_PRINT_ENUM_TYPE(ncclResult_t)
  ABI_PRINT_ENUM_TYPE(ncclDataType_t)
  ABI_PRINT_ENUM_TYPE(ncclRedOp_dummy_t)
  ABI_PRINT_ENUM_TYPE(ncclRedOp_t)
  ABI_PRINT_ENUM_TYPE(ncclScalarResidence_t)
  ABI_PRINT_ENUM_TYPE(ncclHostCftMode_t)
  ABI_PRINT_ENUM_TYPE(ncclNvlsHostMode_t)
  ABI_PRINT_ENUM_TYPE(ncclCommMemStat_t)
  ABI_PRINT_ENUM_TYPE(ncclEncryptionMode_t)
  ABI_PRINT_TYPE(ncclComm_t)
  ABI_PRINT_TYPE(ncclWindow_t)
  ABI_PRINT_TYPE(ncclParamHandle_t)
  ABI_PRINT_TYPE(ncclUniqueId)
  ABI_PRINT_TYPE(ncclConfig_t)
  ABI_PRINT_TYPE(ncclConfigExt_t)
  ABI_PRINT_TYPE(ncclCollConfig_t)
  ABI_PRINT_TYPE(ncclSimInfo_t)
  ABI_PRINT_TYPE(ncclEncryptionConfig_t)
  ABI_PRINT_TYPE(ncclWaitSignalDesc_t)
#undef ABI_PRINT_ENUM_TYPE
#undef ABI_PRINT_TYPE
}
#endif

int main(void) {
  dumpResultAndTypeEnums();
  dumpNewerEnums();
  dumpVersionMacros();
  dumpValueMacros();
  dumpFlagMacros();
  dumpConfig();
  dumpCollConfig();
  dumpOtherStructs();
  dumpConfigInitializer();
  dumpOtherInitializers();
  dumpFunctionList();
#ifdef __cplusplus
  dumpSignatures();
  dumpTypeNames();
#endif
  return 0;
}
