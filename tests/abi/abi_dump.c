/*
 * abi_dump -- prints every ABI-relevant fact of an nccl.h, one `name value` line each: enum values,
 * macro constants, sizes, alignments, offsets and types of struct fields, the values the
 * initializers produce and (C++ only) the type of every function.
 *
 * The same source is built against Braid's nccl.h and, where it is installed, NVIDIA's, in C and in
 * C++ (abi_dump_cxx.cc includes this file); abi_compare.sh diffs the outputs. The header to read
 * comes in as ABI_NCCL_H, an absolute path, so the include search order cannot pick the wrong one.
 * Lines that only the C++ build can print start with "cxx.".
 */
#ifndef ABI_NCCL_H
#error "build with -DABI_NCCL_H=\"/path/to/nccl.h\""
#endif
#include ABI_NCCL_H

#include <stddef.h>
#include <stdio.h>

#include "abi_functions.h"

/* ncclResetDebugInit is declared deprecated by both headers; naming it here is intended. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#ifdef __cplusplus
#include <type_traits>
#include <typeinfo>

/* The spelling of a type, identical to the C11 _Generic table below. */
template <typename T>
struct AbiTypeName {
  static constexpr const char* kName = "other";
};
#define ABI_TYPE_NAME_ENTRY(type, name)        \
  template <>                                  \
  struct AbiTypeName<type> {                   \
    static constexpr const char* kName = name; \
  };
#define ABI_TYPE_NAME(expr) AbiTypeName<std::decay_t<decltype(expr)>>::kName
#define ABI_ALIGNOF(type) alignof(type)
#else
/* clang-format cannot lay out a _Generic association list. */
/* clang-format off */
#define ABI_TYPE_NAME(expr)                                                                          \
  _Generic((expr), char: "char", signed char: "signed char", unsigned char: "unsigned char",         \
           short: "short", unsigned short: "unsigned short", int: "int", unsigned int: "unsigned int", \
           long: "long", unsigned long: "unsigned long", long long: "long long",                      \
           unsigned long long: "unsigned long long", float: "float", double: "double",                \
           long double: "long double", char*: "char*", const char*: "const char*", void*: "void*",   \
           const void*: "const void*", default: "other")
/* clang-format on */
#define ABI_ALIGNOF(type) _Alignof(type)
#endif

#ifdef __cplusplus
ABI_TYPE_NAME_ENTRY(char, "char")
ABI_TYPE_NAME_ENTRY(signed char, "signed char")
ABI_TYPE_NAME_ENTRY(unsigned char, "unsigned char")
ABI_TYPE_NAME_ENTRY(short, "short")
ABI_TYPE_NAME_ENTRY(unsigned short, "unsigned short")
ABI_TYPE_NAME_ENTRY(int, "int")
ABI_TYPE_NAME_ENTRY(unsigned int, "unsigned int")
ABI_TYPE_NAME_ENTRY(long, "long")
ABI_TYPE_NAME_ENTRY(unsigned long, "unsigned long")
ABI_TYPE_NAME_ENTRY(long long, "long long")
ABI_TYPE_NAME_ENTRY(unsigned long long, "unsigned long long")
ABI_TYPE_NAME_ENTRY(float, "float")
ABI_TYPE_NAME_ENTRY(double, "double")
ABI_TYPE_NAME_ENTRY(long double, "long double")
ABI_TYPE_NAME_ENTRY(char*, "char*")
ABI_TYPE_NAME_ENTRY(const char*, "const char*")
ABI_TYPE_NAME_ENTRY(void*, "void*")
ABI_TYPE_NAME_ENTRY(const void*, "const void*")
#endif

#define PRINT_INT(name, expr) printf("%s %lld (type %s)\n", name, (long long)(expr), ABI_TYPE_NAME(expr))
#define PRINT_ENUM(value) printf("enum.%s %lld\n", #value, (long long)(value))
#define PRINT_SIZE(type) \
  printf("sizeof.%s %zu\nalignof.%s %zu\n", #type, sizeof(type), #type, (size_t)ABI_ALIGNOF(type))
#define PRINT_FIELD(type, field)                                                                                       \
  printf("field.%s.%s offset %zu size %zu type %s\n", #type, #field, offsetof(type, field), sizeof(((type*)0)->field), \
         ABI_TYPE_NAME(((type*)0)->field))
#define PRINT_PTR_FIELD(prefix, obj, field) \
  printf("%s.%s %s\n", prefix, #field, (obj).field == NULL ? "NULL" : "non-NULL")
#define PRINT_INT_FIELD(prefix, obj, field) printf("%s.%s %lld\n", prefix, #field, (long long)(obj).field)
#define PRINT_MACRO_UNDEFINED(name) printf("macro.%s <undefined>\n", name)

static void dumpEnums(void) {
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

/* Every macro is guarded, so that one missing from a header shows as a diff line rather than a
 * build failure. */
static void dumpMacros(void) {
#ifdef NCCL_MAJOR
  PRINT_INT("macro.NCCL_MAJOR", NCCL_MAJOR);
#else
  PRINT_MACRO_UNDEFINED("NCCL_MAJOR");
#endif
#ifdef NCCL_MINOR
  PRINT_INT("macro.NCCL_MINOR", NCCL_MINOR);
#else
  PRINT_MACRO_UNDEFINED("NCCL_MINOR");
#endif
#ifdef NCCL_PATCH
  PRINT_INT("macro.NCCL_PATCH", NCCL_PATCH);
#else
  PRINT_MACRO_UNDEFINED("NCCL_PATCH");
#endif
#ifdef NCCL_SUFFIX
  printf("macro.NCCL_SUFFIX \"%s\"\n", NCCL_SUFFIX);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SUFFIX");
#endif
#ifdef NCCL_VERSION_CODE
  PRINT_INT("macro.NCCL_VERSION_CODE", NCCL_VERSION_CODE);
#else
  PRINT_MACRO_UNDEFINED("NCCL_VERSION_CODE");
#endif
#ifdef NCCL_VERSION
  PRINT_INT("macro.NCCL_VERSION(NCCL_MAJOR,NCCL_MINOR,NCCL_PATCH)", NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
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
#ifdef NCCL_UNIQUE_ID_BYTES
  PRINT_INT("macro.NCCL_UNIQUE_ID_BYTES", NCCL_UNIQUE_ID_BYTES);
#else
  PRINT_MACRO_UNDEFINED("NCCL_UNIQUE_ID_BYTES");
#endif
#ifdef NCCL_COMM_NULL
  printf("macro.NCCL_COMM_NULL %s\n", (NCCL_COMM_NULL) == 0 ? "null" : "non-null");
#else
  PRINT_MACRO_UNDEFINED("NCCL_COMM_NULL");
#endif
#ifdef NCCL_CONFIG_UNDEF_INT
  PRINT_INT("macro.NCCL_CONFIG_UNDEF_INT", NCCL_CONFIG_UNDEF_INT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CONFIG_UNDEF_INT");
#endif
#ifdef NCCL_CONFIG_UNDEF_PTR
  printf("macro.NCCL_CONFIG_UNDEF_PTR %s\n", (NCCL_CONFIG_UNDEF_PTR) == 0 ? "null" : "non-null");
#else
  PRINT_MACRO_UNDEFINED("NCCL_CONFIG_UNDEF_PTR");
#endif
#ifdef NCCL_SPLIT_NOCOLOR
  PRINT_INT("macro.NCCL_SPLIT_NOCOLOR", NCCL_SPLIT_NOCOLOR);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SPLIT_NOCOLOR");
#endif
#ifdef NCCL_UNDEF_FLOAT
  printf("macro.NCCL_UNDEF_FLOAT %a (type %s)\n", (double)(NCCL_UNDEF_FLOAT), ABI_TYPE_NAME(NCCL_UNDEF_FLOAT));
#else
  PRINT_MACRO_UNDEFINED("NCCL_UNDEF_FLOAT");
#endif
#ifdef NCCL_WIN_DEFAULT
  PRINT_INT("macro.NCCL_WIN_DEFAULT", NCCL_WIN_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_DEFAULT");
#endif
#ifdef NCCL_WIN_COLL_SYMMETRIC
  PRINT_INT("macro.NCCL_WIN_COLL_SYMMETRIC", NCCL_WIN_COLL_SYMMETRIC);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_COLL_SYMMETRIC");
#endif
#ifdef NCCL_WIN_REQUIRED_ALIGNMENT
  PRINT_INT("macro.NCCL_WIN_REQUIRED_ALIGNMENT", NCCL_WIN_REQUIRED_ALIGNMENT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_REQUIRED_ALIGNMENT");
#endif
#ifdef NCCL_CTA_POLICY_DEFAULT
  PRINT_INT("macro.NCCL_CTA_POLICY_DEFAULT", NCCL_CTA_POLICY_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CTA_POLICY_DEFAULT");
#endif
#ifdef NCCL_CTA_POLICY_EFFICIENCY
  PRINT_INT("macro.NCCL_CTA_POLICY_EFFICIENCY", NCCL_CTA_POLICY_EFFICIENCY);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CTA_POLICY_EFFICIENCY");
#endif
#ifdef NCCL_CTA_POLICY_ZERO
  PRINT_INT("macro.NCCL_CTA_POLICY_ZERO", NCCL_CTA_POLICY_ZERO);
#else
  PRINT_MACRO_UNDEFINED("NCCL_CTA_POLICY_ZERO");
#endif
#ifdef NCCL_SHRINK_DEFAULT
  PRINT_INT("macro.NCCL_SHRINK_DEFAULT", NCCL_SHRINK_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SHRINK_DEFAULT");
#endif
#ifdef NCCL_SHRINK_ABORT
  PRINT_INT("macro.NCCL_SHRINK_ABORT", NCCL_SHRINK_ABORT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SHRINK_ABORT");
#endif
#ifdef NCCL_REVOKE_DEFAULT
  PRINT_INT("macro.NCCL_REVOKE_DEFAULT", NCCL_REVOKE_DEFAULT);
#else
  PRINT_MACRO_UNDEFINED("NCCL_REVOKE_DEFAULT");
#endif
#ifdef NCCL_API_MAGIC
  PRINT_INT("macro.NCCL_API_MAGIC", NCCL_API_MAGIC);
#else
  PRINT_MACRO_UNDEFINED("NCCL_API_MAGIC");
#endif
#ifdef NCCL_WIN_STRICT_ORDERING
  PRINT_INT("macro.NCCL_WIN_STRICT_ORDERING", NCCL_WIN_STRICT_ORDERING);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_STRICT_ORDERING");
#endif
#ifdef NCCL_WIN_GIN_ONLY
  PRINT_INT("macro.NCCL_WIN_GIN_ONLY", NCCL_WIN_GIN_ONLY);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_GIN_ONLY");
#endif
#ifdef NCCL_WIN_CFT_COUNTED
  PRINT_INT("macro.NCCL_WIN_CFT_COUNTED", NCCL_WIN_CFT_COUNTED);
#else
  PRINT_MACRO_UNDEFINED("NCCL_WIN_CFT_COUNTED");
#endif
#ifdef NCCL_SUSPEND_MEM
  PRINT_INT("macro.NCCL_SUSPEND_MEM", NCCL_SUSPEND_MEM);
#else
  PRINT_MACRO_UNDEFINED("NCCL_SUSPEND_MEM");
#endif
}

static void dumpStructs(void) {
  PRINT_SIZE(ncclComm_t);
  PRINT_SIZE(ncclWindow_t);

  PRINT_SIZE(ncclUniqueId);
  PRINT_FIELD(ncclUniqueId, internal);

  PRINT_SIZE(ncclConfig_t);
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
  /* The struct tag is part of the ABI: NCCL names it after the version that introduced the layout. */
  PRINT_SIZE(struct ncclConfig_v23100);

  PRINT_SIZE(ncclSimInfo_t);
  PRINT_FIELD(ncclSimInfo_t, size);
  PRINT_FIELD(ncclSimInfo_t, magic);
  PRINT_FIELD(ncclSimInfo_t, version);
  PRINT_FIELD(ncclSimInfo_t, estimatedTime);
  PRINT_SIZE(struct ncclSimInfo_v22200);

  PRINT_SIZE(ncclConfigExt_t);
  PRINT_FIELD(ncclConfigExt_t, next);
  PRINT_FIELD(ncclConfigExt_t, key);
  PRINT_FIELD(ncclConfigExt_t, key.vendorId);
  PRINT_FIELD(ncclConfigExt_t, key.optionId);
  PRINT_FIELD(ncclConfigExt_t, val);
  PRINT_FIELD(ncclConfigExt_t, val.i);
  PRINT_FIELD(ncclConfigExt_t, val.s);
  PRINT_FIELD(ncclConfigExt_t, val.raw);

  PRINT_SIZE(ncclCollConfig_t);
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
  PRINT_SIZE(struct ncclCollConfig_v23200);

  PRINT_SIZE(ncclEncryptionConfig_t);
  PRINT_FIELD(ncclEncryptionConfig_t, size);
  PRINT_FIELD(ncclEncryptionConfig_t, magic);
  PRINT_FIELD(ncclEncryptionConfig_t, version);
  PRINT_FIELD(ncclEncryptionConfig_t, mode);
  PRINT_FIELD(ncclEncryptionConfig_t, psk);
  PRINT_SIZE(struct ncclEncryptionConfig_v23200);

  PRINT_SIZE(ncclWaitSignalDesc_t);
  PRINT_FIELD(ncclWaitSignalDesc_t, opCnt);
  PRINT_FIELD(ncclWaitSignalDesc_t, peer);
  PRINT_FIELD(ncclWaitSignalDesc_t, sigIdx);
  PRINT_FIELD(ncclWaitSignalDesc_t, ctx);

  PRINT_SIZE(ncclParamHandle_t);
}

static void dumpInitializers(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  const char* c = "init.NCCL_CONFIG_INITIALIZER";
  PRINT_INT_FIELD(c, config, size);
  printf("%s.magic 0x%x\n", c, config.magic);
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

  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  const char* s = "init.NCCL_SIM_INFO_INITIALIZER";
  PRINT_INT_FIELD(s, sim, size);
  printf("%s.magic 0x%x\n", s, sim.magic);
  PRINT_INT_FIELD(s, sim, version);
  printf("%s.estimatedTime %a\n", s, (double)sim.estimatedTime);

  ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
  const char* k = "init.NCCL_COLLCONFIG_INITIALIZER";
  PRINT_INT_FIELD(k, coll, size);
  printf("%s.magic 0x%x\n", k, coll.magic);
  PRINT_INT_FIELD(k, coll, version);
  PRINT_PTR_FIELD(k, coll, ext);
  PRINT_INT_FIELD(k, coll, minCTAs);
  PRINT_INT_FIELD(k, coll, maxCTAs);
  PRINT_INT_FIELD(k, coll, nvlsCTAs);
  PRINT_INT_FIELD(k, coll, cgaClusterSize);
  PRINT_PTR_FIELD(k, coll, algSelection);
  PRINT_INT_FIELD(k, coll, forceAlgSelection);
  PRINT_INT_FIELD(k, coll, CTAPolicy);
  PRINT_INT_FIELD(k, coll, userProfilerTag);
  PRINT_PTR_FIELD(k, coll, launchCompletionEvent);

  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  const char* e = "init.NCCL_ENCRYPTION_CONFIG_INITIALIZER";
  PRINT_INT_FIELD(e, enc, size);
  printf("%s.magic 0x%x\n", e, enc.magic);
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
  printf("cxx.type.ncclResult_t %s\n", typeid(ncclResult_t).name());
  printf("cxx.type.ncclDataType_t %s\n", typeid(ncclDataType_t).name());
  printf("cxx.type.ncclRedOp_t %s\n", typeid(ncclRedOp_t).name());
  printf("cxx.type.ncclScalarResidence_t %s\n", typeid(ncclScalarResidence_t).name());
  printf("cxx.type.ncclComm_t %s\n", typeid(ncclComm_t).name());
  printf("cxx.type.ncclWindow_t %s\n", typeid(ncclWindow_t).name());
  printf("cxx.type.ncclUniqueId %s\n", typeid(ncclUniqueId).name());
  printf("cxx.type.ncclConfig_t %s\n", typeid(ncclConfig_t).name());
  printf("cxx.type.ncclSimInfo_t %s\n", typeid(ncclSimInfo_t).name());
  printf("cxx.type.ncclCollConfig_t %s\n", typeid(ncclCollConfig_t).name());
  printf("cxx.type.ncclConfigExt_t %s\n", typeid(ncclConfigExt_t).name());
  printf("cxx.type.ncclEncryptionConfig_t %s\n", typeid(ncclEncryptionConfig_t).name());
  printf("cxx.type.ncclParamHandle_t %s\n", typeid(ncclParamHandle_t).name());
  printf("cxx.type.ncclCommMemStat_t %s\n", typeid(ncclCommMemStat_t).name());
  printf("cxx.enum_underlying.ncclResult_t %s\n", typeid(std::underlying_type_t<ncclResult_t>).name());
  printf("cxx.enum_underlying.ncclDataType_t %s\n", typeid(std::underlying_type_t<ncclDataType_t>).name());
  printf("cxx.enum_underlying.ncclRedOp_t %s\n", typeid(std::underlying_type_t<ncclRedOp_t>).name());
  printf("cxx.enum_underlying.ncclScalarResidence_t %s\n",
         typeid(std::underlying_type_t<ncclScalarResidence_t>).name());
}
#endif

int main(void) {
  dumpEnums();
  dumpMacros();
  dumpStructs();
  dumpInitializers();
  dumpFunctionList();
#ifdef __cplusplus
  dumpSignatures();
#endif
  return 0;
}
