// The public API's behaviour that needs no GPU: version, error strings, argument checks that must
// fail before any CUDA work, groups, and functions whose features have not landed yet.
#include <gtest/gtest.h>
#include <nccl.h>
#include <nccl_device/host.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

std::string lastError() { return ncclGetLastError(nullptr); }

TEST(Api, VersionIs23203) {
  int v = 0;
  ASSERT_EQ(ncclSuccess, ncclGetVersion(&v));
  EXPECT_EQ(23203, v);
  EXPECT_EQ(ncclInvalidArgument, ncclGetVersion(nullptr));
}

TEST(Api, ErrorStringsMatchNccl) {
  EXPECT_STREQ("no error", ncclGetErrorString(ncclSuccess));
  EXPECT_STREQ("unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
               ncclGetErrorString(ncclUnhandledCudaError));
  EXPECT_STREQ("unhandled system error (run with NCCL_DEBUG=INFO for details)", ncclGetErrorString(ncclSystemError));
  EXPECT_STREQ("internal error - please report this issue to the NCCL developers",
               ncclGetErrorString(ncclInternalError));
  EXPECT_STREQ("invalid argument (run with NCCL_DEBUG=WARN for details)", ncclGetErrorString(ncclInvalidArgument));
  EXPECT_STREQ("invalid usage (run with NCCL_DEBUG=WARN for details)", ncclGetErrorString(ncclInvalidUsage));
  EXPECT_STREQ("remote process exited or there was a network error", ncclGetErrorString(ncclRemoteError));
  EXPECT_STREQ("NCCL operation in progress", ncclGetErrorString(ncclInProgress));
  EXPECT_STREQ("unknown result code", ncclGetErrorString(ncclNumResults));
  EXPECT_STREQ("unknown result code", ncclGetErrorString(static_cast<ncclResult_t>(-3)));
}

TEST(Api, NullAndForeignCommunicatorsAreInvalidArguments) {
  int value = 0;
  EXPECT_EQ(ncclInvalidArgument, ncclCommCount(nullptr, &value));
  EXPECT_NE(std::string::npos, lastError().find("ncclCommCount: comm is NULL"));
  EXPECT_EQ(ncclInvalidArgument, ncclCommUserRank(nullptr, &value));
  EXPECT_EQ(ncclInvalidArgument, ncclCommCuDevice(nullptr, &value));
  ncclResult_t async;
  EXPECT_EQ(ncclInvalidArgument, ncclCommGetAsyncError(nullptr, &async));
  EXPECT_EQ(ncclInvalidArgument, ncclCommFinalize(nullptr));
  char garbage[256];
  std::memset(garbage, 0x5a, sizeof(garbage));
  ncclComm_t fake = reinterpret_cast<ncclComm_t>(garbage);
  EXPECT_EQ(ncclInvalidArgument, ncclCommCount(fake, &value));
  EXPECT_NE(std::string::npos, lastError().find("not a live communicator"));
  EXPECT_EQ(ncclInvalidArgument, ncclCommDestroy(fake));
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, fake, nullptr));
  // NCCL accepts destroying or aborting a NULL communicator as a no-op; so does Braid.
  EXPECT_EQ(ncclSuccess, ncclCommDestroy(nullptr));
  EXPECT_EQ(ncclSuccess, ncclCommAbort(nullptr));
}

TEST(Api, InitArgumentsAreCheckedBeforeAnyGpuWork) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclComm_t comm;
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRank(nullptr, 2, id, 0));
  EXPECT_NE(std::string::npos, lastError().find("newcomm"));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRank(&comm, 0, id, 0));
  EXPECT_NE(std::string::npos, lastError().find("nranks"));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRank(&comm, 4, id, 4));
  EXPECT_NE(std::string::npos, lastError().find("rank is 4"));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRank(&comm, 4, id, -1));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankScalable(&comm, 4, 0, 0, &id, nullptr));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankScalable(&comm, 4, 0, 1, nullptr, nullptr));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitAll(nullptr, 2, nullptr));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitAll(&comm, 0, nullptr));
  EXPECT_EQ(ncclInvalidArgument, ncclGetUniqueId(nullptr));
}

TEST(Api, BadConfigsAreInvalidArguments) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclComm_t comm;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0x12345678;
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  EXPECT_NE(std::string::npos, lastError().find("magic"));

  config = NCCL_CONFIG_INITIALIZER;
  config.size = 8;
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  EXPECT_NE(std::string::npos, lastError().find("size"));

  config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 2;
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  EXPECT_NE(std::string::npos, lastError().find("blocking"));

  config = NCCL_CONFIG_INITIALIZER;
  config.maxCTAs = 65;
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  EXPECT_NE(std::string::npos, lastError().find("maxCTAs"));

  config = NCCL_CONFIG_INITIALIZER;
  config.CTAPolicy = 7;
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  EXPECT_NE(std::string::npos, lastError().find("CTAPolicy"));
}

// The nccl*Config calls exist and check the communicator before their config (which a NULL
// communicator leaves unread, a bad one included), naming themselves.
TEST(Api, ConfigCallsCheckTheirCommunicator) {
  ncclCollConfig_t bad = NCCL_COLLCONFIG_INITIALIZER;
  bad.magic = 0;
  const ncclCollConfig_t* const badConfig = &bad;
  for (const ncclCollConfig_t* config : {static_cast<const ncclCollConfig_t*>(nullptr), badConfig}) {
    EXPECT_EQ(ncclInvalidArgument,
              ncclAllReduceConfig(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclAllReduceConfig: comm is NULL"));
    EXPECT_EQ(ncclInvalidArgument, ncclBroadcastConfig(nullptr, nullptr, 1, ncclFloat, 0, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclBroadcastConfig"));
    EXPECT_EQ(ncclInvalidArgument,
              ncclReduceConfig(nullptr, nullptr, 1, ncclFloat, ncclSum, 0, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclReduceConfig"));
    EXPECT_EQ(ncclInvalidArgument, ncclAllGatherConfig(nullptr, nullptr, 1, ncclFloat, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclAllGatherConfig"));
    EXPECT_EQ(ncclInvalidArgument,
              ncclReduceScatterConfig(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclReduceScatterConfig"));
    EXPECT_EQ(ncclInvalidArgument, ncclAlltoAllConfig(nullptr, nullptr, 1, ncclFloat, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclAlltoAllConfig"));
    EXPECT_EQ(ncclInvalidArgument, ncclGatherConfig(nullptr, nullptr, 1, ncclFloat, 0, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclGatherConfig"));
    EXPECT_EQ(ncclInvalidArgument, ncclScatterConfig(nullptr, nullptr, 1, ncclFloat, 0, nullptr, nullptr, config));
    EXPECT_NE(std::string::npos, lastError().find("ncclScatterConfig"));
  }
}

TEST(Api, GroupEndWithoutStartIsInvalidUsage) {
  EXPECT_EQ(ncclInvalidUsage, ncclGroupEnd());
  EXPECT_EQ(ncclSuccess, ncclGroupStart());
  EXPECT_EQ(ncclSuccess, ncclGroupStart());
  EXPECT_EQ(ncclSuccess, ncclGroupEnd());
  EXPECT_EQ(ncclSuccess, ncclGroupEnd());
  EXPECT_EQ(ncclInvalidUsage, ncclGroupEnd());
}

TEST(Api, UniqueIdNeedsNoGpuAndIsRandom) {
  ncclUniqueId a, b;
  ASSERT_EQ(ncclSuccess, ncclGetUniqueId(&a));
  ASSERT_EQ(ncclSuccess, ncclGetUniqueId(&b));
  EXPECT_NE(0, std::memcmp(&a, &b, sizeof(a)));
}

// The 2.29-2.32 functions that answer without a communicator. Those that need one are in
// tests/gpu/host_api_232_test.cc.
TEST(Api, NewerFunctionsWithoutACommunicator) {
  EXPECT_EQ(ncclInvalidArgument, ncclDevCommCreate(nullptr, nullptr, nullptr));
  EXPECT_NE(std::string::npos, lastError().find("comm is NULL")) << lastError();
  ncclLLA2AHandle_t handle;
  ncclDevResourceRequirements_t req;
  EXPECT_EQ(ncclSuccess, ncclLLA2ACreateRequirement(1, 4, &handle, &req));
  EXPECT_EQ(req.bufferSize, 1u * (1 + 2 * 4) * 16);
  EXPECT_EQ(ncclInvalidArgument, ncclLLA2ACreateRequirement(1, 4, nullptr, &req));
  EXPECT_NE(std::string::npos, lastError().find("outHandle"));
  EXPECT_EQ(4 * 3, ncclLLA2ACalcSlots(4, 17));  // 17 bytes take three 8-byte words
  void* ptr = &handle;
  EXPECT_EQ(ncclSuccess, ncclGetLsaMultimemDevicePointer(nullptr, 0, &ptr));  // no multicast: NULL
  EXPECT_EQ(nullptr, ptr);
  EXPECT_EQ(ncclInvalidArgument, ncclGetLsaMultimemDevicePointer(nullptr, 0, nullptr));
  EXPECT_EQ(ncclInvalidUsage, ncclGetMultimemDeviceLeInfo(nullptr, 0, nullptr, nullptr));
  EXPECT_NE(std::string::npos, lastError().find("CFT"));
  EXPECT_STREQ("timeout", ncclGetErrorString(ncclTimeout));
  ncclComm_t grown = nullptr;
  ncclUniqueId id;
  EXPECT_EQ(ncclInvalidArgument, ncclCommGrow(nullptr, 4, nullptr, 2, &grown, nullptr));  // joining without id
  EXPECT_EQ(ncclInvalidArgument, ncclCommGrow(nullptr, 4, &id, 4, &grown, nullptr));      // rank out of range
  uint64_t value = 0;
  EXPECT_EQ(ncclInvalidArgument, ncclCommMemStats(nullptr, ncclStatGpuMemTotal, &value));
}

// ncclSetEncryption's arguments, as NCCL reads them: NULL is the default config (plain text); the
// magic must be there; a smaller size keeps the defaults of the fields it does not cover; a PSK
// must have at least 32 bytes. Turning TLS on works where OpenSSL 3 is (tls_socket_test covers
// the connections and the library's absence).
TEST(Api, SetEncryptionChecksItsConfig) {
  EXPECT_EQ(ncclSuccess, ncclSetEncryption(nullptr));
  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  EXPECT_EQ(ncclSuccess, ncclSetEncryption(&enc));
  enc.mode = NCCL_ENCRYPTION_MODE_PSK;
  EXPECT_EQ(ncclInvalidArgument, ncclSetEncryption(&enc));  // no key
  EXPECT_NE(std::string::npos, lastError().find("config->psk is NULL")) << lastError();
  enc.psk = "0123456789abcdef0123456789abcde";  // 31 bytes
  EXPECT_EQ(ncclInvalidArgument, ncclSetEncryption(&enc));
  EXPECT_NE(std::string::npos, lastError().find("config->psk has 31 bytes")) << lastError();
  enc.mode = 7;
  EXPECT_EQ(ncclInvalidArgument, ncclSetEncryption(&enc));
  EXPECT_NE(std::string::npos, lastError().find("config->mode 7")) << lastError();
  ncclEncryptionConfig_t bad = enc;
  bad.magic = 0;
  EXPECT_EQ(ncclInvalidArgument, ncclSetEncryption(&bad));
  EXPECT_NE(std::string::npos, lastError().find("NCCL_ENCRYPTION_CONFIG_INITIALIZER")) << lastError();
  // A config that ends before `mode` is the default one: plain text, whatever follows it in memory.
  bad = enc;
  bad.size = offsetof(ncclEncryptionConfig_t, mode);
  EXPECT_EQ(ncclSuccess, ncclSetEncryption(&bad));
  enc.mode = NCCL_ENCRYPTION_MODE_PSK;
  enc.psk = "0123456789abcdef0123456789abcdef";  // 32 bytes
  const ncclResult_t on = ncclSetEncryption(&enc);
  if (on == ncclSystemError) {
    EXPECT_NE(std::string::npos, lastError().find("libssl.so.3 could not be loaded")) << lastError();
  } else {
    EXPECT_EQ(ncclSuccess, on) << lastError();
  }
  EXPECT_EQ(ncclSuccess, ncclSetEncryption(nullptr));  // back to plain text for the other tests
}

// Argument checks of ncclMemAlloc/ncclMemFree, made before any CUDA call (no GPU needed).
TEST(Api, MemAllocAndFreeCheckTheirArguments) {
  void* p = nullptr;
  EXPECT_EQ(ncclInvalidArgument, ncclMemAlloc(nullptr, 1024));
  EXPECT_NE(std::string::npos, lastError().find("ptr is NULL"));
  EXPECT_EQ(ncclInvalidArgument, ncclMemAlloc(&p, 0));
  EXPECT_NE(std::string::npos, lastError().find("size is 0"));
  EXPECT_EQ(nullptr, p);
  int notOurs = 0;
  EXPECT_EQ(ncclInvalidArgument, ncclMemFree(&notOurs));
  EXPECT_NE(std::string::npos, lastError().find("not an allocation of ncclMemAlloc"));
  EXPECT_EQ(ncclSuccess, ncclMemFree(nullptr));
}

TEST(Api, GroupSimulateEndChecksItsStructAndKeepsTheGroupOnError) {
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclInvalidUsage, ncclGroupSimulateEnd(&sim));  // not in a group
  ASSERT_EQ(ncclSuccess, ncclGroupStart());
  EXPECT_EQ(ncclInvalidArgument, ncclGroupSimulateEnd(nullptr));
  EXPECT_NE(std::string::npos, lastError().find("simInfo is NULL"));
  ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ncclInvalidArgument, ncclGroupSimulateEnd(&bad));
  EXPECT_NE(std::string::npos, lastError().find("NCCL_SIM_INFO_INITIALIZER"));
  bad = NCCL_SIM_INFO_INITIALIZER;
  bad.size = 8;
  EXPECT_EQ(ncclInvalidArgument, ncclGroupSimulateEnd(&bad));
  EXPECT_NE(std::string::npos, lastError().find("simInfo->size"));
  // The refused calls left the group open: an empty group is estimated at 0 us.
  EXPECT_EQ(-1.0f, sim.estimatedTime);
  ASSERT_EQ(ncclSuccess, ncclGroupSimulateEnd(&sim));
  EXPECT_EQ(0.0f, sim.estimatedTime);
  EXPECT_EQ(ncclInvalidUsage, ncclGroupEnd());  // and it is closed now
}

TEST(Api, GroupSimulateEndAtAnInnerLevelOnlyEndsThatLevel) {
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclSuccess, ncclGroupStart());
  ASSERT_EQ(ncclSuccess, ncclGroupStart());
  ASSERT_EQ(ncclSuccess, ncclGroupSimulateEnd(&sim));
  EXPECT_EQ(-1.0f, sim.estimatedTime);
  ASSERT_EQ(ncclSuccess, ncclGroupEnd());
  EXPECT_EQ(ncclInvalidUsage, ncclGroupEnd());
}

// The parameter API through the exported symbols (tests/unit/param_api_test covers it in depth):
// the ncclX and pncclX names agree, values are consistent between the typed and the string forms,
// and an unknown key is refused with a WARN naming it.
TEST(Api, ParameterApiIsExported) {
  ncclParamHandle_t h = nullptr;
  ASSERT_EQ(ncclSuccess, ncclParamBind(&h, "NCCL_BUFFSIZE"));
  ncclParamHandle_t p = nullptr;
  ASSERT_EQ(ncclSuccess, pncclParamBind(&p, "NCCL_BUFFSIZE"));
  EXPECT_EQ(h, p);
  int64_t value = 0;
  ASSERT_EQ(ncclSuccess, pncclParamGetI64(h, &value));
  const char* text = nullptr;
  int len = 0;
  ASSERT_EQ(ncclSuccess, ncclParamGetParameter("NCCL_BUFFSIZE", &text, &len));
  EXPECT_EQ(std::to_string(value), text);
  const char** keys = nullptr;
  int count = 0;
  ASSERT_EQ(ncclSuccess, ncclParamGetAllParameterKeys(&keys, &count));
  bool listed = false;
  for (int i = 0; i < count; ++i) listed = listed || std::strcmp(keys[i], "NCCL_BUFFSIZE") == 0;
  EXPECT_TRUE(listed);
  EXPECT_EQ(ncclInvalidArgument, ncclParamBind(&h, "NCCL_NOT_A_PARAMETER"));
  EXPECT_NE(std::string::npos, lastError().find("'NCCL_NOT_A_PARAMETER'"));
}

}  // namespace
