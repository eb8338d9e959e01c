// The NCCL_DEBUG contract: line format, level and subsystem filters, NCCL_DEBUG_FILE, the last
// error, truncation, the version banner, ABORT.
#include "util/log.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "util/log_internal.h"
#include "util_test_env.h"

namespace braid {
namespace {

using LogTest = testing::UtilEnvTest;

int deviceThree() { return 3; }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(LogTest, InfoLineHasHostPidTidDevicePrefix) {
  std::string path = logToFile("INFO", "INIT");
  logSetDeviceQuery(&deviceThree);
  INFO(kLogInit, "hello %d", 42);
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u) << readFile(path);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, std::regex(R"(^([^:.\s]+):(\d+):(\d+) \[3\] NCCL INFO hello 42$)")))
      << lines[0];
  EXPECT_EQ(m[1].str(), shortHostName());
  EXPECT_EQ(std::stol(m[2].str()), static_cast<long>(getpid()));
  EXPECT_EQ(std::stol(m[3].str()), currentThreadId());
}

TEST_F(LogTest, DeviceIsMinusOneWithoutHook) {
  std::string path = logToFile("INFO", "INIT");
  INFO(kLogInit, "x");
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(^\S+:\d+:\d+ \[-1\] NCCL INFO x$)"))) << lines[0];
}

TEST_F(LogTest, ThreadIdIsTheCallingThreads) {
  std::string path = logToFile("INFO", "INIT");
  long otherTid = 0;
  std::thread t([&] {
    otherTid = currentThreadId();
    INFO(kLogInit, "from thread");
  });
  t.join();
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(otherTid, currentThreadId());
  EXPECT_TRUE(contains(lines[0], ":" + std::to_string(otherTid) + " [-1] NCCL INFO from thread")) << lines[0];
}

TEST_F(LogTest, WarnLineNamesSourceFileAndLine) {
  std::string path = logToFile("WARN", "");
  WARN("disk %s", "full");
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(^\S+:\d+:\d+ \[-1\] log_test\.cc:\d+ NCCL WARN disk full$)")))
      << lines[0];
}

TEST_F(LogTest, TraceLineNamesSourceFileAndLine) {
  std::string path = logToFile("TRACE", "COLL");
  TRACE(kLogColl, "step %d", 7);
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(^\S+:\d+:\d+ \[-1\] NCCL TRACE log_test\.cc:\d+ step 7$)")))
      << lines[0];
}

TEST_F(LogTest, WarnLevelHidesInfoAndTrace) {
  std::string path = logToFile("WARN", "ALL");
  INFO(kLogInit, "info line");
  TRACE(kLogInit, "trace line");
  WARN("warn line");
  std::string text = readFile(path);
  EXPECT_FALSE(contains(text, "info line"));
  EXPECT_FALSE(contains(text, "trace line"));
  EXPECT_TRUE(contains(text, "NCCL WARN warn line"));
  EXPECT_TRUE(logEnabled(LogLevel::kWarn, kLogInit));
  EXPECT_FALSE(logEnabled(LogLevel::kInfo, kLogInit));
}

TEST_F(LogTest, InfoLevelHidesTrace) {
  std::string path = logToFile("info", "ALL");  // level names are case-insensitive
  INFO(kLogInit, "info line");
  TRACE(kLogInit, "trace line");
  std::string text = readFile(path);
  EXPECT_TRUE(contains(text, "NCCL INFO info line"));
  EXPECT_FALSE(contains(text, "trace line"));
  EXPECT_FALSE(logEnabled(LogLevel::kTrace, kLogInit));
}

TEST_F(LogTest, UnsetDebugPrintsNothingAndCreatesNoFile) {
  std::string path = dir() + "/never.txt";
  setVar("NCCL_DEBUG_FILE", path);
  INFO(kLogAll, "info");
  WARN("warn");
  EXPECT_FALSE(logEnabled(LogLevel::kWarn, kLogAll));
  EXPECT_FALSE(logEnabled(LogLevel::kVersion, kLogAll));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(LogTest, MalformedLevelWarnsOnStderrAndMeansWarn) {
  std::string path = logToFile("LOUD", "ALL");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(logEnabled(LogLevel::kWarn, kLogAll));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(logEnabled(LogLevel::kInfo, kLogAll));
  EXPECT_TRUE(contains(err, "NCCL WARN NCCL_DEBUG has unknown value 'LOUD'")) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(LogTest, SubsystemFilterDefaultIsInitBootstrapEnv) {
  logToFile("INFO", "");
  EXPECT_TRUE(logEnabled(LogLevel::kInfo, kLogInit));
  EXPECT_TRUE(logEnabled(LogLevel::kInfo, kLogBootstrap));
  EXPECT_TRUE(logEnabled(LogLevel::kInfo, kLogEnv));
  EXPECT_FALSE(logEnabled(LogLevel::kInfo, kLogColl));
  EXPECT_FALSE(logEnabled(LogLevel::kInfo, kLogNet));
}

TEST_F(LogTest, SubsystemListSelectsOnlyThose) {
  std::string path = logToFile("INFO", "coll, NET");
  INFO(kLogColl, "coll line");
  INFO(kLogNet, "net line");
  INFO(kLogInit, "init line");
  std::string text = readFile(path);
  EXPECT_TRUE(contains(text, "coll line"));
  EXPECT_TRUE(contains(text, "net line"));
  EXPECT_FALSE(contains(text, "init line"));
}

TEST_F(LogTest, CaretInvertsTheWholeList) {
  std::string path = logToFile("INFO", "^INIT,NET");
  INFO(kLogInit, "init line");
  INFO(kLogNet, "net line");
  INFO(kLogColl, "coll line");
  INFO(kLogRas, "ras line");
  std::string text = readFile(path);
  EXPECT_FALSE(contains(text, "init line"));
  EXPECT_FALSE(contains(text, "net line"));
  EXPECT_TRUE(contains(text, "coll line"));
  EXPECT_TRUE(contains(text, "ras line"));
}

TEST_F(LogTest, AllSelectsEverySubsystem) {
  logToFile("INFO", "ALL");
  for (uint64_t bit = 1; bit <= kLogRas; bit <<= 1) EXPECT_TRUE(logEnabled(LogLevel::kInfo, bit)) << bit;
}

TEST_F(LogTest, WarnIgnoresTheSubsystemFilter) {
  std::string path = logToFile("INFO", "^ALL");
  INFO(kLogInit, "init line");
  WARN("still printed");
  std::string text = readFile(path);
  EXPECT_FALSE(contains(text, "init line"));
  EXPECT_TRUE(contains(text, "NCCL WARN still printed"));
}

TEST_F(LogTest, UnknownSubsystemIsNamedAndTheRestApplies) {
  logToFile("INFO", "INIT,FOO,bar");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(logEnabled(LogLevel::kInfo, kLogInit));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(logEnabled(LogLevel::kInfo, kLogColl));
  EXPECT_TRUE(contains(err, "NCCL_DEBUG_SUBSYS")) << err;
  EXPECT_TRUE(contains(err, "FOO,bar")) << err;
}

TEST_F(LogTest, ParseSubsysDirectly) {
  uint64_t mask = 0;
  std::string unknown;
  EXPECT_EQ(parseLogSubsys("INIT,ENV", &mask, &unknown), ncclSuccess);
  EXPECT_EQ(mask, kLogInit | kLogEnv);
  EXPECT_EQ(parseLogSubsys("^ P2P , shm ", &mask, &unknown), ncclSuccess);
  EXPECT_EQ(mask, ~(kLogP2p | kLogShm));
  EXPECT_EQ(parseLogSubsys("ALL", &mask, &unknown), ncclSuccess);
  EXPECT_EQ(mask, static_cast<uint64_t>(kLogAll));
  EXPECT_EQ(parseLogSubsys("NVLS,,XYZ", &mask, &unknown), ncclInvalidArgument);
  EXPECT_EQ(mask, static_cast<uint64_t>(kLogNvls));
  EXPECT_EQ(unknown, "XYZ");
}

TEST_F(LogTest, ParseLevelDirectly) {
  LogLevel level = LogLevel::kInfo;
  EXPECT_EQ(parseLogLevel("", &level), ncclSuccess);
  EXPECT_EQ(level, LogLevel::kNone);
  EXPECT_EQ(parseLogLevel("Version", &level), ncclSuccess);
  EXPECT_EQ(level, LogLevel::kVersion);
  EXPECT_EQ(parseLogLevel("abort", &level), ncclSuccess);
  EXPECT_EQ(level, LogLevel::kAbort);
  EXPECT_EQ(parseLogLevel("TRACE", &level), ncclSuccess);
  EXPECT_EQ(level, LogLevel::kTrace);
  EXPECT_EQ(parseLogLevel("INFOO", &level), ncclInvalidArgument);
  EXPECT_EQ(level, LogLevel::kTrace);
}

TEST_F(LogTest, DebugFileExpandsHostAndPid) {
  setenv("NCCL_DEBUG", "INFO", 1);
  setVar("NCCL_DEBUG_FILE", dir() + "/nccl.%h.%p.log");
  INFO(kLogInit, "to the file");
  std::string expected = dir() + "/nccl." + shortHostName() + "." + std::to_string(getpid()) + ".log";
  ASSERT_TRUE(std::filesystem::exists(expected)) << expected;
  EXPECT_TRUE(contains(readFile(expected), "NCCL INFO to the file"));
}

TEST_F(LogTest, ExpandFilePathPatterns) {
  EXPECT_EQ(expandLogFilePath("/x/%h-%p", "node1", 42), "/x/node1-42");
  EXPECT_EQ(expandLogFilePath("100%%-%q-%", "h", 1), "100%-%q-%");
  EXPECT_EQ(expandLogFilePath("plain", "h", 1), "plain");
}

TEST_F(LogTest, DebugFileIsAppendedNotTruncated) {
  std::string path = writeFile("append.log", "earlier line\n");
  logToFile("INFO", "INIT", "append.log");
  INFO(kLogInit, "later line");
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "earlier line");
  EXPECT_TRUE(contains(lines[1], "later line"));
}

TEST_F(LogTest, UnopenableDebugFileFallsBackToStdout) {
  setenv("NCCL_DEBUG", "INFO", 1);
  setVar("NCCL_DEBUG_FILE", dir() + "/missing_dir/log.txt");
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  INFO(kLogInit, "on stdout");
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(out, "NCCL INFO on stdout")) << out;
  EXPECT_TRUE(contains(err, "NCCL_DEBUG_FILE")) << err;
  EXPECT_TRUE(contains(err, "missing_dir/log.txt")) << err;
}

TEST_F(LogTest, LastErrorIsRecordedEvenWhenNothingIsPrinted) {
  WARN("cannot connect to %s:%d", "10.0.0.1", 1234);
  EXPECT_STREQ(logLastError(), "cannot connect to 10.0.0.1:1234");
  logReset();  // forgets settings, not the last error
  EXPECT_STREQ(logLastError(), "cannot connect to 10.0.0.1:1234");
  INFO(kLogAll, "info does not replace it");
  EXPECT_STREQ(logLastError(), "cannot connect to 10.0.0.1:1234");
  WARN("second");
  EXPECT_STREQ(logLastError(), "second");
}

TEST_F(LogTest, LongMessageIsTruncatedSafely) {
  std::string path = logToFile("INFO", "INIT");
  std::string huge(5000, 'x');
  INFO(kLogInit, "%s", huge.c_str());
  WARN("%s", huge.c_str());
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_LT(line.size(), 3000u);
    EXPECT_GT(line.size(), 1500u);
    EXPECT_EQ(line.substr(line.size() - 4), "x...");
  }
  std::string last = logLastError();
  EXPECT_EQ(last.size(), 1023u);
  EXPECT_EQ(last.substr(last.size() - 4), "x...");
}

TEST_F(LogTest, VersionLevelPrintsOnlyTheBannerOnce) {
  std::string path = logToFile("VERSION", "ALL");
  INFO(kLogInit, "not at VERSION");
  WARN("not at VERSION either");
  logVersionBannerOnce();
  logVersionBannerOnce();
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u) << readFile(path);
  const std::string& banner = lines[0];
  EXPECT_EQ(banner.rfind("NCCL version 2.32.3+braid", 0), 0u) << banner;
  EXPECT_TRUE(contains(banner, "Braid ")) << banner;
  EXPECT_TRUE(contains(banner, "NCCL 2.32.3 API")) << banner;
  // util is linked statically into this test, so the object that holds it is the test itself.
  char exe[PATH_MAX] = {};
  ASSERT_NE(realpath("/proc/self/exe", exe), nullptr);
  EXPECT_TRUE(contains(banner, std::string(" from ") + exe)) << banner;
}

TEST_F(LogTest, BannerIsAnInfoLineAtInfo) {
  std::string path = logToFile("INFO", "INIT");
  logVersionBannerOnce();
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_search(lines[0], std::regex(R"(^\S+:\d+:\d+ \[-1\] NCCL INFO NCCL version 2\.32\.3\+braid)")))
      << lines[0];
}

TEST_F(LogTest, NoBannerWhenDebugIsUnset) {
  ::testing::internal::CaptureStdout();
  logVersionBannerOnce();
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

TEST_F(LogTest, ConcurrentLinesNeverInterleave) {
  std::string path = logToFile("INFO", "COLL");
  constexpr int kThreads = 8;
  constexpr int kLines = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) INFO(kLogColl, "thread %d line %d payload %s", t, i, "abcdefghijklmnop");
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<std::string> lines = readLines(path);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kLines));
  std::regex format(R"(^\S+:\d+:\d+ \[-1\] NCCL INFO thread \d line \d+ payload abcdefghijklmnop$)");
  for (const std::string& line : lines) ASSERT_TRUE(std::regex_match(line, format)) << line;
}

TEST_F(LogTest, AbortLevelAbortsOnWarn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  logToFile("ABORT", "INIT");
  EXPECT_TRUE(logEnabled(LogLevel::kInfo, kLogInit));  // ABORT is above INFO
  EXPECT_DEATH(WARN("fatal problem"), "log_test\\.cc:[0-9]+ NCCL ABORT");
}

}  // namespace
}  // namespace braid
