// The parameter registry: defaults, environment, integer syntax, config files and their order,
// caching, ENV-subsystem reports, the README table.
#include "util/params.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "util/config_file.h"
#include "util/log.h"
#include "util/text.h"
#include "util_test_env.h"

namespace braid {
namespace {

using ParamsTest = testing::UtilEnvTest;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(ParamsTest, DefaultsWhenNothingIsSet) {
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  EXPECT_EQ(paramInt(ParamId::kCommBlocking), -1);
  EXPECT_FALSE(paramIsSet(ParamId::kSocketRetryCnt));
  EXPECT_EQ(paramSource(ParamId::kSocketRetryCnt), "default");
  EXPECT_EQ(paramString(ParamId::kDebugSubsys), "INIT,BOOTSTRAP,ENV");
  EXPECT_EQ(paramString(ParamId::kCommId), "");
  EXPECT_FALSE(paramIsSet(ParamId::kCommId));
}

TEST_F(ParamsTest, StaticDescriptions) {
  const ParamInfo& info = paramInfo(ParamId::kSocketRetryCnt);
  EXPECT_EQ(info.id, ParamId::kSocketRetryCnt);
  EXPECT_EQ(info.type, ParamType::kInt);
  EXPECT_STREQ(info.name, "NCCL_SOCKET_RETRY_CNT");
  EXPECT_STREQ(info.defaultText, "34");
  EXPECT_STREQ(paramInfo(ParamId::kMinCtas).defaultText, "-1");
  EXPECT_EQ(paramInfo(ParamId::kDebug).type, ParamType::kString);
  for (int i = 0; i < static_cast<int>(ParamId::kCount); ++i) {
    EXPECT_EQ(paramInfo(static_cast<ParamId>(i)).id, static_cast<ParamId>(i));
    EXPECT_NE(std::string(paramInfo(static_cast<ParamId>(i)).description), "");
  }
}

TEST_F(ParamsTest, EnvironmentValues) {
  setVar("NCCL_SOCKET_RETRY_CNT", "7");
  setVar("NCCL_COMM_ID", "10.1.2.3:5000");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 7);
  EXPECT_TRUE(paramIsSet(ParamId::kSocketRetryCnt));
  EXPECT_EQ(paramSource(ParamId::kSocketRetryCnt), "environment");
  EXPECT_EQ(paramString(ParamId::kCommId), "10.1.2.3:5000");
  EXPECT_EQ(paramString(ParamId::kSocketRetryCnt), "7");
}

TEST_F(ParamsTest, HexAndNegativeIntegers) {
  setVar("NCCL_SOCKET_RETRY_CNT", "0x1F");
  setVar("NCCL_MIN_CTAS", "-5");
  setVar("NCCL_MAX_CTAS", "-0x10");
  setVar("NCCL_BOOTSTRAP_TIMEOUT", " 0X10 ");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 31);
  EXPECT_EQ(paramInt(ParamId::kMinCtas), -5);
  EXPECT_EQ(paramInt(ParamId::kMaxCtas), -16);
  EXPECT_EQ(paramInt(ParamId::kBootstrapTimeout), 16);
}

TEST_F(ParamsTest, ParseInt64Limits) {
  int64_t v = 0;
  EXPECT_EQ(parseInt64("9223372036854775807", &v), ncclSuccess);
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_EQ(parseInt64("-9223372036854775808", &v), ncclSuccess);
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_EQ(parseInt64("0x7fffffffffffffff", &v), ncclSuccess);
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_EQ(parseInt64("0", &v), ncclSuccess);
  EXPECT_EQ(v, 0);
  v = 99;
  for (const char* bad : {"9223372036854775808", "-9223372036854775809", "0x8000000000000000", "", " ", "-", "0x",
                          "12abc", "1.5", "--1", "+1", "0x1g", "1 2", "abc"}) {
    EXPECT_EQ(parseInt64(bad, &v), ncclInvalidArgument) << "'" << bad << "'";
    EXPECT_EQ(v, 99) << "'" << bad << "'";
  }
}

TEST(TextTest, RankListJoinsAndCollapsesRuns) {
  EXPECT_EQ(rankList({}), "");
  EXPECT_EQ(rankList({7}), "7");
  EXPECT_EQ(rankList({0, 1, 2, 3, 5, 7, 8}), "0,1,2,3,5,7,8");
  EXPECT_EQ(rankList({3, 1, 2}), "3,1,2");  // the order given
  EXPECT_EQ(rankList({0, 1, 2, 3, 5, 7, 8}, {",", true}), "0-3,5,7,8");
  EXPECT_EQ(rankList({0, 1, 2, 3, 5, 7, 8}, {", ", true}), "0-3, 5, 7, 8");
  EXPECT_EQ(rankList({4, 5, 6, 0}, {",", true}), "4-6,0");  // runs only between neighbours
}

TEST_F(ParamsTest, MalformedIntegerWarnsOnceAndUsesTheDefault) {
  setVar("NCCL_SOCKET_RETRY_CNT", "12abc");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  EXPECT_FALSE(paramIsSet(ParamId::kSocketRetryCnt));
  EXPECT_EQ(paramSource(ParamId::kSocketRetryCnt), "default");
  std::string warning = logLastError();
  EXPECT_TRUE(contains(warning, "NCCL_SOCKET_RETRY_CNT")) << warning;
  EXPECT_TRUE(contains(warning, "'12abc'")) << warning;
  EXPECT_TRUE(contains(warning, "34")) << warning;
  // Cached: the second read does not warn again.
  WARN("marker");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  EXPECT_STREQ(logLastError(), "marker");
}

TEST_F(ParamsTest, ValuesAreCachedUntilReset) {
  setVar("NCCL_SOCKET_RETRY_CNT", "5");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 5);
  setenv("NCCL_SOCKET_RETRY_CNT", "6", 1);
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 5);
  paramsReset();
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 6);
}

TEST_F(ParamsTest, EmptyValueCountsAsUnset) {
  setVar("NCCL_SOCKET_RETRY_CNT", "");
  setVar("NCCL_DEBUG_SUBSYS", "");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  EXPECT_FALSE(paramIsSet(ParamId::kSocketRetryCnt));
  EXPECT_EQ(paramString(ParamId::kDebugSubsys), "INIT,BOOTSTRAP,ENV");
}

TEST_F(ParamsTest, ConfFileValuesWithCommentsAndBlanks) {
  std::string conf = writeFile("nccl.conf",
                               "# a comment\n"
                               "\n"
                               "   # an indented comment\n"
                               "  NCCL_SOCKET_RETRY_CNT = 0x10   # trailing comment\n"
                               "NCCL_COMM_ID=host.example:1234\r\n"
                               "NCCL_HOSTID=a=b#c\n"
                               "NCCL_MIN_CTAS=3\n"
                               "NCCL_MIN_CTAS=4\n");
  setVar("NCCL_CONF_FILE", conf);
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 16);
  EXPECT_EQ(paramSource(ParamId::kSocketRetryCnt), conf);
  EXPECT_TRUE(paramIsSet(ParamId::kSocketRetryCnt));
  EXPECT_EQ(paramString(ParamId::kCommId), "host.example:1234");
  EXPECT_EQ(paramString(ParamId::kHostId), "a=b#c");
  EXPECT_EQ(paramInt(ParamId::kMinCtas), 3);  // the first definition wins
  EXPECT_EQ(paramSource(ParamId::kMaxCtas), "default");
}

TEST_F(ParamsTest, EnvironmentOverridesConfFile) {
  std::string conf = writeFile("nccl.conf", "NCCL_SOCKET_RETRY_CNT=10\nNCCL_MIN_CTAS=2\n");
  setenv("NCCL_CONF_FILE", conf.c_str(), 1);
  setVar("NCCL_SOCKET_RETRY_CNT", "20");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 20);
  EXPECT_EQ(paramSource(ParamId::kSocketRetryCnt), "environment");
  EXPECT_EQ(paramInt(ParamId::kMinCtas), 2);
}

TEST_F(ParamsTest, HomeConfigFileIsReadWhenNoConfFileIsNamed) {
  std::string home = writeFile("home/.nccl.conf", "NCCL_BOOTSTRAP_TIMEOUT=9\n");
  logReset();
  EXPECT_EQ(paramInt(ParamId::kBootstrapTimeout), 9);
  EXPECT_EQ(paramSource(ParamId::kBootstrapTimeout), home);
}

TEST_F(ParamsTest, NamedConfFileReplacesTheHomeFile) {
  writeFile("home/.nccl.conf", "NCCL_BOOTSTRAP_TIMEOUT=9\nNCCL_MIN_CTAS=1\n");
  std::string conf = writeFile("nccl.conf", "NCCL_BOOTSTRAP_TIMEOUT=11\n");
  setVar("NCCL_CONF_FILE", conf);
  EXPECT_EQ(paramInt(ParamId::kBootstrapTimeout), 11);
  EXPECT_EQ(paramInt(ParamId::kMinCtas), -1);
}

TEST_F(ParamsTest, SystemFileComesLast) {
  std::string system = writeFile("system.conf", "NCCL_BOOTSTRAP_TIMEOUT=1\nNCCL_MAX_CTAS=8\n");
  paramsSetSystemConfigPath(system);
  std::string home = writeFile("home/.nccl.conf", "NCCL_BOOTSTRAP_TIMEOUT=2\n");
  logReset();
  EXPECT_EQ(paramInt(ParamId::kBootstrapTimeout), 2);
  EXPECT_EQ(paramSource(ParamId::kBootstrapTimeout), home);
  EXPECT_EQ(paramInt(ParamId::kMaxCtas), 8);
  EXPECT_EQ(paramSource(ParamId::kMaxCtas), system);
}

TEST_F(ParamsTest, UnreadableConfFileWarns) {
  std::string missing = dir() + "/does_not_exist.conf";
  setVar("NCCL_CONF_FILE", missing);
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  std::string warning = logLastError();
  EXPECT_TRUE(contains(warning, missing)) << warning;
}

TEST_F(ParamsTest, MissingHomeFileIsSilent) {
  WARN("marker");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  EXPECT_STREQ(logLastError(), "marker");
}

TEST_F(ParamsTest, MalformedConfLinesAreReportedWithFileAndLine) {
  std::string conf = writeFile("bad.conf",
                               "NCCL_MIN_CTAS=2\n"
                               "this line has no equals sign\n"
                               "BAD NAME=1\n"
                               "=nothing\n"
                               "NCCL_MAX_CTAS=zz\n");
  std::string log = logToFile("WARN", "");
  setVar("NCCL_CONF_FILE", conf);
  EXPECT_EQ(paramInt(ParamId::kMinCtas), 2);
  EXPECT_EQ(paramInt(ParamId::kMaxCtas), -1);
  std::string text = readFile(log);
  EXPECT_TRUE(contains(text, conf + ":2:")) << text;
  EXPECT_TRUE(contains(text, conf + ":3:")) << text;
  EXPECT_TRUE(contains(text, conf + ":4:")) << text;
  EXPECT_TRUE(contains(text, "NCCL_MAX_CTAS has invalid value 'zz' (from " + conf + ":5)")) << text;
}

TEST_F(ParamsTest, ParseConfigTextDirectly) {
  ConfigValues values;
  std::vector<std::string> problems;
  parseConfigText("A=1\n  B = two words  \n# C=3\nD\nE=\n", "f.conf", &values, &problems);
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values["A"].value, "1");
  EXPECT_EQ(values["A"].line, 1);
  EXPECT_EQ(values["B"].value, "two words");
  EXPECT_EQ(values["E"].value, "");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("f.conf:4:", 0), 0u) << problems[0];
}

TEST_F(ParamsTest, EnvSubsystemReportsEachSetVariableOnce) {
  std::string log = logToFile("INFO", "ENV");
  setVar("NCCL_SOCKET_RETRY_CNT", "5");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 5);
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 5);
  EXPECT_EQ(paramInt(ParamId::kMinCtas), -1);  // unset: nothing to report
  std::string text = readFile(log);
  const std::string note = "NCCL INFO NCCL_SOCKET_RETRY_CNT set by environment to 5";
  size_t first = text.find(note);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(note, first + 1), std::string::npos) << text;
  EXPECT_FALSE(contains(text, "NCCL_MIN_CTAS")) << text;
  // The logger's own variables are reported too, once logging is up.
  EXPECT_TRUE(contains(text, "NCCL_DEBUG set by environment to INFO")) << text;
}

TEST_F(ParamsTest, EnvReportsNeedTheEnvSubsystem) {
  std::string log = logToFile("INFO", "INIT");
  setVar("NCCL_SOCKET_RETRY_CNT", "5");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 5);
  EXPECT_FALSE(contains(readFile(log), "set by")) << readFile(log);
}

TEST_F(ParamsTest, UnknownConfVariablesAreReportedUnderEnv) {
  std::string conf = writeFile("nccl.conf", "NCCL_NOT_A_THING=1\nNCCL_MIN_CTAS=2\n");
  std::string log = logToFile("INFO", "ENV");
  setVar("NCCL_CONF_FILE", conf);
  EXPECT_EQ(paramInt(ParamId::kMinCtas), 2);
  std::string text = readFile(log);
  EXPECT_TRUE(contains(text, "NCCL_NOT_A_THING")) << text;
  EXPECT_TRUE(contains(text, "NCCL_MIN_CTAS set by " + conf + ":2 to 2")) << text;
}

// The logger reads its settings through the registry, and the registry reports through the
// logger: configuring logging from a config file that also has problems must neither deadlock nor
// recurse, and the problems must reach the log.
TEST_F(ParamsTest, LoggingConfiguredFromConfFileWithProblems) {
  std::string log = dir() + "/from_conf.log";
  std::string conf = writeFile("nccl.conf",
                               "NCCL_DEBUG=INFO\n"
                               "NCCL_DEBUG_SUBSYS=INIT,ENV\n"
                               "NCCL_DEBUG_FILE=" +
                                   log +
                                   "\n"
                                   "garbage line\n"
                                   "NCCL_SOCKET_RETRY_CNT=oops\n");
  setVar("NCCL_CONF_FILE", conf);
  INFO(kLogInit, "first message");
  EXPECT_EQ(paramInt(ParamId::kSocketRetryCnt), 34);
  std::string text = readFile(log);
  EXPECT_TRUE(contains(text, "NCCL INFO first message")) << text;
  EXPECT_TRUE(contains(text, conf + ":4:")) << text;
  EXPECT_TRUE(contains(text, "NCCL_DEBUG set by " + conf + ":1 to INFO")) << text;
  EXPECT_TRUE(contains(text, "NCCL WARN NCCL_SOCKET_RETRY_CNT has invalid value 'oops'")) << text;
}

TEST_F(ParamsTest, MalformedIntegerReadFirstStillLogsItsWarning) {
  std::string log = logToFile("WARN", "");
  setVar("NCCL_MAX_CTAS", "0xZZ");
  EXPECT_EQ(paramInt(ParamId::kMaxCtas), -1);  // first touch of the registry and of the logger
  EXPECT_TRUE(contains(readFile(log), "NCCL WARN NCCL_MAX_CTAS has invalid value '0xZZ'")) << readFile(log);
}

TEST_F(ParamsTest, ConcurrentFirstReadsAgree) {
  setVar("NCCL_SOCKET_RETRY_CNT", "0x40");
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&wrong] {
      for (int i = 0; i < 1000; ++i) {
        if (paramInt(ParamId::kSocketRetryCnt) != 64) ++wrong;
        if (paramString(ParamId::kDebugSubsys) != "INIT,BOOTSTRAP,ENV") ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ParamsTest, MarkdownTableListsEveryParameterInOrder) {
  std::string table = paramsMarkdownTable();
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < table.size()) {
    size_t nl = table.find('\n', pos);
    ASSERT_NE(nl, std::string::npos) << "table must end with a newline";
    lines.push_back(table.substr(pos, nl - pos));
    pos = nl + 1;
  }
  ASSERT_EQ(lines.size(), static_cast<size_t>(ParamId::kCount) + 2);
  EXPECT_EQ(lines[0], "| Variable | Default | Description |");
  EXPECT_EQ(lines[1], "|---|---|---|");
  for (int i = 0; i < static_cast<int>(ParamId::kCount); ++i) {
    const ParamInfo& info = paramInfo(static_cast<ParamId>(i));
    const std::string& row = lines[static_cast<size_t>(i) + 2];
    EXPECT_EQ(row.rfind(std::string("| `") + info.name + "` | ", 0), 0u) << row;
    EXPECT_TRUE(contains(row, info.description)) << row;
  }
  EXPECT_TRUE(contains(table, "| `NCCL_DEBUG` | (unset) |"));
  EXPECT_TRUE(contains(table, "| `NCCL_SOCKET_RETRY_CNT` | `34` |"));
  EXPECT_TRUE(contains(table, "| `NCCL_DEBUG_SUBSYS` | `INIT,BOOTSTRAP,ENV` |"));
}

}  // namespace
}  // namespace braid
