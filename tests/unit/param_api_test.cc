// NCCL's parameter API (ncclParamBind, ncclParamGet*, ncclParamGetParameter,
// ncclParamGetAllParameterKeys, ncclParamDumpAll), called through the library's own entry points
// (src/api/param_api.cc is compiled into this test): values from the environment, a config file
// and defaults; every typed getter and its range checks; the raw and string forms; the key table;
// the dump; unknown keys, bad handles and NULL arguments; concurrent callers.
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "util/log.h"
#include "util/param_query.h"
#include "util/params.h"
#include "util_test_env.h"

namespace braid {
namespace {

using ParamApiTest = testing::UtilEnvTest;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A fresh random generator per test, its seed in the failure message.
std::mt19937_64 seededRng(uint64_t* seed) {
  *seed = std::random_device{}();
  return std::mt19937_64(*seed);
}

ncclParamHandle_t bind(const char* key) {
  ncclParamHandle_t h = nullptr;
  EXPECT_EQ(ncclParamBind(&h, key), ncclSuccess) << key;
  EXPECT_NE(h, nullptr) << key;
  return h;
}

std::string getStr(ncclParamHandle_t h) {
  const char* out = nullptr;
  EXPECT_EQ(ncclParamGetStr(h, &out), ncclSuccess);
  return out != nullptr ? out : "(null)";
}

std::string getParameter(const char* key, int* lenOut = nullptr) {
  const char* value = nullptr;
  int len = -1;
  EXPECT_EQ(ncclParamGetParameter(key, &value, &len), ncclSuccess) << key;
  if (value == nullptr) return "(null)";
  EXPECT_EQ(len, static_cast<int>(std::strlen(value))) << key;
  if (lenOut != nullptr) *lenOut = len;
  return value;
}

// Poisons the log's last error so that a test can tell whether a call warned.
void markLastError() { WARN("marker"); }

TEST_F(ParamApiTest, EnvironmentValue) {
  uint64_t seed = 0;
  std::mt19937_64 rng = seededRng(&seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t retries = std::uniform_int_distribution<int64_t>(1, 1000000)(rng);
  setVar("NCCL_SOCKET_RETRY_CNT", std::to_string(retries));
  setVar("NCCL_COMM_ID", "10.1.2.3:5000");

  ncclParamHandle_t h = bind("NCCL_SOCKET_RETRY_CNT");
  int64_t value = -7;
  ASSERT_EQ(ncclParamGetI64(h, &value), ncclSuccess);
  EXPECT_EQ(value, retries);
  EXPECT_EQ(getStr(h), std::to_string(retries));
  int len = 0;
  EXPECT_EQ(getParameter("NCCL_SOCKET_RETRY_CNT", &len), std::to_string(retries));
  EXPECT_EQ(len, static_cast<int>(std::to_string(retries).size()));
  EXPECT_EQ(getStr(bind("NCCL_COMM_ID")), "10.1.2.3:5000");
  EXPECT_EQ(getParameter("NCCL_COMM_ID"), "10.1.2.3:5000");
}

TEST_F(ParamApiTest, ConfigFileValue) {
  const std::string conf = writeFile("nccl.conf", "NCCL_BUFFSIZE=123456\nNCCL_ALGO=Ring\n# NCCL_PROTO=LL\n");
  setVar("NCCL_CONF_FILE", conf);
  int32_t buffSize = 0;
  ASSERT_EQ(ncclParamGetI32(bind("NCCL_BUFFSIZE"), &buffSize), ncclSuccess);
  EXPECT_EQ(buffSize, 123456);
  EXPECT_EQ(getParameter("NCCL_ALGO"), "Ring");
  EXPECT_EQ(getParameter("NCCL_PROTO"), "");  // commented out: unset
  EXPECT_EQ(paramSource(ParamId::kBuffSize), conf);
}

TEST_F(ParamApiTest, DefaultValues) {
  int64_t buffSize = 0;
  ASSERT_EQ(ncclParamGetI64(bind("NCCL_BUFFSIZE"), &buffSize), ncclSuccess);
  EXPECT_EQ(buffSize, 4194304);
  int32_t blocking = 0;
  ASSERT_EQ(ncclParamGetI32(bind("NCCL_COMM_BLOCKING"), &blocking), ncclSuccess);
  EXPECT_EQ(blocking, -1);
  EXPECT_EQ(getParameter("NCCL_DEBUG_SUBSYS"), "INIT,BOOTSTRAP,ENV");
  int len = -1;
  EXPECT_EQ(getParameter("NCCL_COMM_ID", &len), "");
  EXPECT_EQ(len, 0);
  uint32_t watch = 0;
  ASSERT_EQ(ncclParamGetU32(bind("BRAID_PEER_WATCH_MS"), &watch), ncclSuccess);
  EXPECT_EQ(watch, 1000u);
}

TEST_F(ParamApiTest, MalformedValueReadsAsTheDefault) {
  setVar("NCCL_SOCKET_RETRY_CNT", "12abc");
  EXPECT_EQ(getParameter("NCCL_SOCKET_RETRY_CNT"), "34");
}

TEST_F(ParamApiTest, IntegersReadAsDecimalText) {
  setVar("NCCL_MIN_CTAS", "-0x10");
  EXPECT_EQ(getStr(bind("NCCL_MIN_CTAS")), "-16");
  EXPECT_EQ(getParameter("NCCL_MIN_CTAS"), "-16");
}

// Sets NCCL_MIN_CTAS (an integer parameter) and makes the registry read it again.
class TypedGetterTest : public ParamApiTest {
 public:
  ncclParamHandle_t set(long long value) {
    setenv("NCCL_MIN_CTAS", std::to_string(value).c_str(), 1);
    paramsReset();
    return bind("NCCL_MIN_CTAS");
  }
  ncclParamHandle_t setText(const std::string& text) {
    setenv("NCCL_MIN_CTAS", text.c_str(), 1);
    paramsReset();
    return bind("NCCL_MIN_CTAS");
  }
};

// Reads `value` through the getter of T: success and the exact value where T holds it; otherwise
// ncclInvalidArgument, *out untouched, and a WARN naming the parameter, the value and the type.
template <typename T, typename Getter>
void expectGetter(TypedGetterTest* test, Getter getter, long long value, bool fits, const char* typeName) {
  SCOPED_TRACE(std::string(typeName) + " " + std::to_string(value));
  ncclParamHandle_t h = test->set(value);
  const T poison = static_cast<T>(0x5a);
  T out = poison;
  markLastError();
  if (fits) {
    ASSERT_EQ(getter(h, &out), ncclSuccess);
    EXPECT_EQ(static_cast<long long>(out), value);
    EXPECT_STREQ(logLastError(), "marker");
  } else {
    ASSERT_EQ(getter(h, &out), ncclInvalidArgument);
    EXPECT_EQ(out, poison);
    const std::string warning = logLastError();
    EXPECT_TRUE(contains(warning, "NCCL_MIN_CTAS")) << warning;
    EXPECT_TRUE(contains(warning, std::to_string(value))) << warning;
    EXPECT_TRUE(contains(warning, typeName)) << warning;
  }
}

TEST_F(TypedGetterTest, EveryTypeAtItsLimits) {
  expectGetter<int8_t>(this, ncclParamGetI8, -128, true, "int8_t");
  expectGetter<int8_t>(this, ncclParamGetI8, 127, true, "int8_t");
  expectGetter<int8_t>(this, ncclParamGetI8, 128, false, "int8_t");
  expectGetter<int8_t>(this, ncclParamGetI8, -129, false, "int8_t");
  expectGetter<int16_t>(this, ncclParamGetI16, -32768, true, "int16_t");
  expectGetter<int16_t>(this, ncclParamGetI16, 32767, true, "int16_t");
  expectGetter<int16_t>(this, ncclParamGetI16, 32768, false, "int16_t");
  expectGetter<int16_t>(this, ncclParamGetI16, -32769, false, "int16_t");
  expectGetter<int32_t>(this, ncclParamGetI32, INT32_MIN, true, "int32_t");
  expectGetter<int32_t>(this, ncclParamGetI32, INT32_MAX, true, "int32_t");
  expectGetter<int32_t>(this, ncclParamGetI32, 2147483648LL, false, "int32_t");
  expectGetter<int32_t>(this, ncclParamGetI32, -2147483649LL, false, "int32_t");
  expectGetter<int64_t>(this, ncclParamGetI64, INT64_MIN, true, "int64_t");
  expectGetter<int64_t>(this, ncclParamGetI64, INT64_MAX, true, "int64_t");
  expectGetter<uint8_t>(this, ncclParamGetU8, 0, true, "uint8_t");
  expectGetter<uint8_t>(this, ncclParamGetU8, 255, true, "uint8_t");
  expectGetter<uint8_t>(this, ncclParamGetU8, 256, false, "uint8_t");
  expectGetter<uint8_t>(this, ncclParamGetU8, -1, false, "uint8_t");
  expectGetter<uint16_t>(this, ncclParamGetU16, 65535, true, "uint16_t");
  expectGetter<uint16_t>(this, ncclParamGetU16, 65536, false, "uint16_t");
  expectGetter<uint16_t>(this, ncclParamGetU16, -1, false, "uint16_t");
  expectGetter<uint32_t>(this, ncclParamGetU32, 4294967295LL, true, "uint32_t");
  expectGetter<uint32_t>(this, ncclParamGetU32, 4294967296LL, false, "uint32_t");
  expectGetter<uint32_t>(this, ncclParamGetU32, -1, false, "uint32_t");
  expectGetter<uint64_t>(this, ncclParamGetU64, 0, true, "uint64_t");
  expectGetter<uint64_t>(this, ncclParamGetU64, -1, false, "uint64_t");
  expectGetter<uint64_t>(this, ncclParamGetU64, INT64_MIN, false, "uint64_t");
}

TEST_F(TypedGetterTest, RandomValuesReadExactlyThroughEveryType) {
  uint64_t seed = 0;
  std::mt19937_64 rng = seededRng(&seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (int round = 0; round < 20; ++round) {
    const long long v = std::uniform_int_distribution<long long>(0, 127)(rng);
    expectGetter<int8_t>(this, ncclParamGetI8, v, true, "int8_t");
    expectGetter<uint8_t>(this, ncclParamGetU8, v, true, "uint8_t");
    const long long w = std::uniform_int_distribution<long long>(INT64_MIN, INT64_MAX)(rng);
    expectGetter<int64_t>(this, ncclParamGetI64, w, true, "int64_t");
    expectGetter<uint64_t>(this, ncclParamGetU64, w, w >= 0, "uint64_t");
    expectGetter<int32_t>(this, ncclParamGetI32, w, w >= INT32_MIN && w <= INT32_MAX, "int32_t");
    expectGetter<uint16_t>(this, ncclParamGetU16, w, w >= 0 && w <= UINT16_MAX, "uint16_t");
  }
}

TEST_F(TypedGetterTest, HexValueFromTheEnvironment) {
  ncclParamHandle_t h = setText("0xff");
  uint8_t u8 = 0;
  ASSERT_EQ(ncclParamGetU8(h, &u8), ncclSuccess);
  EXPECT_EQ(u8, 255);
  int8_t i8 = 0;
  EXPECT_EQ(ncclParamGetI8(h, &i8), ncclInvalidArgument);
}

TEST_F(ParamApiTest, StringParametersReadAsIntegersOnlyWhenNumeric) {
  setVar("NCCL_P2P_LEVEL", "5");
  ncclParamHandle_t h = bind("NCCL_P2P_LEVEL");
  int32_t level = 0;
  ASSERT_EQ(ncclParamGetI32(h, &level), ncclSuccess);
  EXPECT_EQ(level, 5);

  setVar("NCCL_P2P_LEVEL", "NVL");
  int32_t out = 99;
  EXPECT_EQ(ncclParamGetI32(h, &out), ncclInvalidArgument);
  EXPECT_EQ(out, 99);
  std::string warning = logLastError();
  EXPECT_TRUE(contains(warning, "NCCL_P2P_LEVEL") && contains(warning, "'NVL'") && contains(warning, "int32_t"))
      << warning;
  EXPECT_EQ(getStr(h), "NVL");

  // Unset: the empty default is no integer either.
  uint64_t u64 = 1;
  EXPECT_EQ(ncclParamGetU64(bind("NCCL_ALGO"), &u64), ncclInvalidArgument);
  EXPECT_EQ(u64, 1u);
}

TEST_F(ParamApiTest, GetCopiesAnIntegerAsInt64) {
  setVar("NCCL_MIN_CTAS", "-123456789012");
  ncclParamHandle_t h = bind("NCCL_MIN_CTAS");
  unsigned char buf[32];
  std::memset(buf, 0xa5, sizeof(buf));
  int len = -1;
  ASSERT_EQ(ncclParamGet(h, buf, sizeof(buf), &len), ncclSuccess);
  ASSERT_EQ(len, 8);
  int64_t value = 0;
  std::memcpy(&value, buf, sizeof(value));
  EXPECT_EQ(value, -123456789012LL);
  for (size_t i = 8; i < sizeof(buf); ++i) EXPECT_EQ(buf[i], 0xa5) << i;

  // Exactly big enough, then too small: the needed size comes back and nothing is written.
  len = -1;
  ASSERT_EQ(ncclParamGet(h, buf, 8, &len), ncclSuccess);
  EXPECT_EQ(len, 8);
  std::memset(buf, 0xa5, sizeof(buf));
  len = -1;
  EXPECT_EQ(ncclParamGet(h, buf, 7, &len), ncclInvalidArgument);
  EXPECT_EQ(len, 8);
  EXPECT_TRUE(contains(logLastError(), "NCCL_MIN_CTAS")) << logLastError();
  len = -1;
  EXPECT_EQ(ncclParamGet(h, buf, 0, &len), ncclInvalidArgument);
  EXPECT_EQ(len, 8);
  EXPECT_EQ(ncclParamGet(h, buf, -4, &len), ncclInvalidArgument);
  for (unsigned char c : buf) EXPECT_EQ(c, 0xa5);
}

TEST_F(ParamApiTest, GetCopiesAStringWithItsNul) {
  setVar("NCCL_ALGO", "allreduce:Ring;broadcast:^Tree");
  const std::string algo = "allreduce:Ring;broadcast:^Tree";
  const int needed = static_cast<int>(algo.size()) + 1;
  ncclParamHandle_t h = bind("NCCL_ALGO");
  char buf[128];
  std::memset(buf, 'x', sizeof(buf));
  int len = -1;
  ASSERT_EQ(ncclParamGet(h, buf, sizeof(buf), &len), ncclSuccess);
  EXPECT_EQ(len, needed);
  EXPECT_EQ(std::string(buf), algo);
  for (size_t i = static_cast<size_t>(needed); i < sizeof(buf); ++i) EXPECT_EQ(buf[i], 'x') << i;

  std::memset(buf, 'x', sizeof(buf));
  len = -1;
  EXPECT_EQ(ncclParamGet(h, buf, needed - 1, &len), ncclInvalidArgument);  // no room for the NUL
  EXPECT_EQ(len, needed);
  for (char c : buf) EXPECT_EQ(c, 'x');

  // An unset string is one NUL byte.
  len = -1;
  ASSERT_EQ(ncclParamGet(bind("NCCL_PROTO"), buf, 1, &len), ncclSuccess);
  EXPECT_EQ(len, 1);
  EXPECT_EQ(buf[0], '\0');
}

TEST_F(ParamApiTest, AllParameterKeysListsTheWholeRegistry) {
  const char** table = nullptr;
  int tableLen = -1;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&table, &tableLen), ncclSuccess);
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(tableLen, static_cast<int>(ParamId::kCount));
  std::set<std::string> keys;
  for (int i = 0; i < tableLen; ++i) {
    ASSERT_NE(table[i], nullptr) << i;
    keys.insert(table[i]);
    ncclParamHandle_t h = nullptr;
    EXPECT_EQ(ncclParamBind(&h, table[i]), ncclSuccess) << table[i];
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(tableLen));  // no duplicates
  for (const char* known : {"NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_P2P_DISABLE",
                            "NCCL_SOCKET_IFNAME", "BRAID_PEER_WATCH_MS"}) {
    EXPECT_EQ(keys.count(known), 1u) << known;
  }
  for (int i = 0; i < static_cast<int>(ParamId::kCount); ++i) {
    EXPECT_EQ(keys.count(paramInfo(static_cast<ParamId>(i)).name), 1u);
  }

  // The caller may scribble on its table; the next call hands out a whole one again.
  table[0] = "scribbled";
  const char** again = nullptr;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&again, &tableLen), ncclSuccess);
  EXPECT_STREQ(again[0], paramInfo(static_cast<ParamId>(0)).name);
}

TEST_F(ParamApiTest, DumpAllThroughTheLog) {
  const std::string conf = writeFile("nccl.conf", "NCCL_ALGO=Tree\n");
  setVar("NCCL_CONF_FILE", conf);
  setVar("NCCL_BUFFSIZE", "65536");
  const std::string log = logToFile("VERSION", "INIT");
  ncclParamDumpAll();
  const std::vector<std::string> lines = readLines(log);
  ASSERT_EQ(lines.size(), static_cast<size_t>(ParamId::kCount) + 1) << readFile(log);
  for (int i = 0; i < static_cast<int>(ParamId::kCount); ++i) {
    const ParamInfo& info = paramInfo(static_cast<ParamId>(i));
    const std::string& line = lines[static_cast<size_t>(i) + 1];
    EXPECT_EQ(line.rfind(std::string(info.name) + " (", 0), 0u) << line;
  }
  const std::string text = readFile(log);
  EXPECT_TRUE(contains(text, "NCCL_BUFFSIZE (integer) value=65536 set_by=environment default=4194304: ")) << text;
  EXPECT_TRUE(contains(text, "NCCL_ALGO (string) value=Tree set_by=" + conf + " default=<unset>: ")) << text;
  EXPECT_TRUE(contains(text, "NCCL_SOCKET_RETRY_CNT (integer) value=34 set_by=default default=34: ")) << text;
}

TEST_F(ParamApiTest, DumpAllPrintsToStdoutWhenLoggingIsOff) {
  setVar("NCCL_MAX_CTAS", "3");
  ::testing::internal::CaptureStdout();
  ncclParamDumpAll();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(contains(out, "NCCL_MAX_CTAS (integer) value=3 set_by=environment default=-1: ")) << out;
  EXPECT_TRUE(contains(out, "NCCL_DEBUG (string) value=<unset> set_by=default default=<unset>: ")) << out;
  size_t count = 0;
  for (char c : out) count += c == '\n' ? 1 : 0;
  EXPECT_EQ(count, static_cast<size_t>(ParamId::kCount) + 1);
}

TEST_F(ParamApiTest, UnknownKeys) {
  for (const char* key : {"NCCL_NOT_A_PARAMETER", "BUFFSIZE", "nccl_buffsize", "NCCL_BUFFSIZE ", ""}) {
    SCOPED_TRACE(key);
    ncclParamHandle_t h = reinterpret_cast<ncclParamHandle_t>(0x1234);
    EXPECT_EQ(ncclParamBind(&h, key), ncclInvalidArgument);
    EXPECT_EQ(h, reinterpret_cast<ncclParamHandle_t>(0x1234));  // left unmodified
    EXPECT_TRUE(contains(logLastError(), std::string("'") + key + "'")) << logLastError();
    const char* value = "poison";
    int len = 42;
    EXPECT_EQ(ncclParamGetParameter(key, &value, &len), ncclInvalidArgument);
    EXPECT_EQ(value, nullptr);
    EXPECT_EQ(len, 0);
    EXPECT_TRUE(contains(logLastError(), "ncclParamGetParameter")) << logLastError();
  }
}

TEST_F(ParamApiTest, NullArgumentsAndBadHandles) {
  ncclParamHandle_t h = bind("NCCL_BUFFSIZE");
  auto expectWarn = [](ncclResult_t result, const char* function, const char* argument) {
    EXPECT_EQ(result, ncclInvalidArgument) << function << " " << argument;
    const std::string warning = logLastError();
    EXPECT_TRUE(contains(warning, function) && contains(warning, argument)) << warning;
  };
  expectWarn(ncclParamBind(nullptr, "NCCL_BUFFSIZE"), "ncclParamBind", "out");
  expectWarn(ncclParamBind(&h, nullptr), "ncclParamBind", "key");
  expectWarn(ncclParamGetI8(nullptr, nullptr), "ncclParamGetI8", "handle");
  expectWarn(ncclParamGetI16(h, nullptr), "ncclParamGetI16", "out");
  expectWarn(ncclParamGetI32(h, nullptr), "ncclParamGetI32", "out");
  expectWarn(ncclParamGetI64(h, nullptr), "ncclParamGetI64", "out");
  expectWarn(ncclParamGetU8(h, nullptr), "ncclParamGetU8", "out");
  expectWarn(ncclParamGetU16(h, nullptr), "ncclParamGetU16", "out");
  expectWarn(ncclParamGetU32(h, nullptr), "ncclParamGetU32", "out");
  expectWarn(ncclParamGetU64(h, nullptr), "ncclParamGetU64", "out");
  expectWarn(ncclParamGetStr(h, nullptr), "ncclParamGetStr", "out");
  expectWarn(ncclParamGetStr(nullptr, nullptr), "ncclParamGetStr", "handle");
  char buf[16];
  int len = 0;
  expectWarn(ncclParamGet(h, nullptr, 16, &len), "ncclParamGet", "out");
  expectWarn(ncclParamGet(h, buf, 16, nullptr), "ncclParamGet", "len");
  expectWarn(ncclParamGet(nullptr, buf, 16, &len), "ncclParamGet", "handle");
  const char* value = nullptr;
  expectWarn(ncclParamGetParameter(nullptr, &value, &len), "ncclParamGetParameter", "key");
  expectWarn(ncclParamGetParameter("NCCL_BUFFSIZE", nullptr, &len), "ncclParamGetParameter", "value");
  expectWarn(ncclParamGetParameter("NCCL_BUFFSIZE", &value, nullptr), "ncclParamGetParameter", "valueLen");
  const char** table = nullptr;
  expectWarn(ncclParamGetAllParameterKeys(nullptr, &len), "ncclParamGetAllParameterKeys", "table");
  expectWarn(ncclParamGetAllParameterKeys(&table, nullptr), "ncclParamGetAllParameterKeys", "tableLen");

  // Handles not from ncclParamBind: inside the table but misaligned, and outside it.
  int64_t out = 0;
  ncclParamHandle_t misaligned = reinterpret_cast<ncclParamHandle_t>(reinterpret_cast<char*>(h) + 1);
  expectWarn(ncclParamGetI64(misaligned, &out), "ncclParamGetI64", "not a parameter handle");
  ncclParamHandle_t outside = reinterpret_cast<ncclParamHandle_t>(&out);
  expectWarn(ncclParamGetI64(outside, &out), "ncclParamGetI64", "not a parameter handle");
  expectWarn(ncclParamGet(outside, buf, 16, &len), "ncclParamGet", "not a parameter handle");
}

TEST_F(ParamApiTest, HandlesLastAndReadTheLiveValue) {
  ncclParamHandle_t first = bind("NCCL_BOOTSTRAP_TIMEOUT");
  EXPECT_EQ(bind("NCCL_BOOTSTRAP_TIMEOUT"), first);  // one handle per parameter
  EXPECT_NE(bind("NCCL_BUFFSIZE"), first);
  int64_t value = 0;
  ASSERT_EQ(ncclParamGetI64(first, &value), ncclSuccess);
  EXPECT_EQ(value, 120);
  // After ncclResetDebugInit (logReset) the registry reads the environment again; the old handle
  // still works and sees the value now in use.
  setVar("NCCL_BOOTSTRAP_TIMEOUT", "17");
  ASSERT_EQ(ncclParamGetI64(first, &value), ncclSuccess);
  EXPECT_EQ(value, 17);
}

TEST_F(ParamApiTest, ReturnedStringsAreSeparatePerCallKind) {
  setVar("NCCL_ALGO", "Ring");
  setVar("NCCL_PROTO", "Simple");
  const char* str = nullptr;
  ASSERT_EQ(ncclParamGetStr(bind("NCCL_ALGO"), &str), ncclSuccess);
  const char* value = nullptr;
  int len = 0;
  ASSERT_EQ(ncclParamGetParameter("NCCL_PROTO", &value, &len), ncclSuccess);
  EXPECT_STREQ(str, "Ring");  // untouched by ncclParamGetParameter
  EXPECT_STREQ(value, "Simple");
}

TEST_F(ParamApiTest, ConcurrentCallersGetTheirOwnResults) {
  setVar("NCCL_ALGO", "Ring");
  setVar("NCCL_PROTO", "LL128");
  setVar("NCCL_BUFFSIZE", "8388608");
  constexpr int kThreads = 8;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      const char* key = t % 2 == 0 ? "NCCL_ALGO" : "NCCL_PROTO";
      const std::string expected = t % 2 == 0 ? "Ring" : "LL128";
      for (int i = 0; i < 2000; ++i) {
        ncclParamHandle_t h = nullptr;
        const char* str = nullptr;
        const char* value = nullptr;
        int len = 0;
        int64_t buffSize = 0;
        ncclParamHandle_t buffHandle = nullptr;
        if (ncclParamBind(&h, key) != ncclSuccess || ncclParamGetStr(h, &str) != ncclSuccess ||
            ncclParamGetParameter(key, &value, &len) != ncclSuccess ||
            ncclParamBind(&buffHandle, "NCCL_BUFFSIZE") != ncclSuccess ||
            ncclParamGetI64(buffHandle, &buffSize) != ncclSuccess || expected != str || expected != value ||
            len != static_cast<int>(expected.size()) || buffSize != 8388608) {
          ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << "thread " << t;
}

TEST_F(ParamApiTest, PrefixedNamesOnly) {
  // The registry's own BRAID_* variables are keys by their full names too.
  setVar("BRAID_HANG_REPORT_MS", "0");
  EXPECT_EQ(getParameter("BRAID_HANG_REPORT_MS"), "0");
  ncclParamHandle_t h = nullptr;
  EXPECT_EQ(ncclParamBind(&h, "HANG_REPORT_MS"), ncclInvalidArgument);
}

}  // namespace
}  // namespace braid
