// braid-perf's --json document (tools/perf/json_report.h): its exact text for a compare run with a
// refused row, an unchecked row and a metric one library lacks, and the banner lines compare mode
// reads it from.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "json_report.h"

namespace braidperf {
namespace {

RowResult result(double oopUs, long long oopWrong, double ipUs, long long ipWrong, int nranks, const RowSpec& spec) {
  RowResult r;
  r.spec = spec;
  r.oop.us = oopUs;
  r.oop.wrong = oopWrong;
  r.ip.us = ipUs;
  r.ip.wrong = ipWrong;
  setBandwidth(spec, nranks, &r.oop);
  setBandwidth(spec, nranks, &r.ip);
  return r;
}

PerfReport compareRun() {
  PerfReport report;
  report.op = "all_reduce";
  report.command = {"braid-perf", "all_reduce", "-p", "--json", "out \"1\".json"};
  report.setup = "2 ranks = 2 processes x 1 thread x 1 GPU";
  report.nranks = 2;
  report.runs = 3;
  report.libraries = {{"A", "/opt/braid/libnccl.so.2", "/opt/braid/libnccl.so.2", 23203, ""},
                      {"B", "/nv/libnccl.so.2", "/nv/libnccl.so.2", 22809, ""}};
  RowSpec small{Coll::kAllReduce, ncclFloat32, ncclSum, -1, 1024, 256};
  RowSpec big{Coll::kAllReduce, ncclFloat32, ncclSum, -1, 1 << 20, 1 << 18};
  report.rows.push_back(JsonRow{small, {result(5.5, 0, 6, 0, 2, small), result(11, 0, 12, 0, 2, small)}});
  report.rows.push_back(JsonRow{big, {result(kRefusedUs, -1, kRefusedUs, -1, 2, big), result(20, -1, 0, -1, 2, big)}});
  report.metrics.push_back(JsonMetric{"init_ms", {1.5, std::nan("")}});
  return report;
}

std::string readFile(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The fixture is also scripts/perf_page.py's input in tests/python/perf_page_test.py.
TEST(PerfJson, CompareRunDocument) {
  const std::string expected = readFile(BRAID_PERF_JSON_FIXTURE);
  ASSERT_FALSE(expected.empty()) << BRAID_PERF_JSON_FIXTURE;
  const RunContext context{"2026-11-29T12:00:00Z",
                           {"NVIDIA H200", "NVIDIA H200"},
                           {"BRAID_DIRECT_SIMPLE_BUFFSIZE=262144", "NCCL_NVLS_ENABLE=0"}};
  EXPECT_EQ(formatJson(compareRun(), context), expected);
}

TEST(PerfJson, EmptyListsAndControlCharacters) {
  PerfReport report;
  report.op = "comm";
  report.command = {"braid-perf", "a\tb\x01"};
  const std::string text = formatJson(report, RunContext{"d", {}, {}});
  EXPECT_NE(text.find(R"("command": ["braid-perf", "a\tb\u0001"])"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("gpus": [],)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("rows": [],)"), std::string::npos) << text;
  EXPECT_NE(text.find("\"metrics\": []\n}"), std::string::npos) << text;
}

TEST(PerfJson, SetupBanner) {
  int nranks = 0;
  std::string setup;
  ASSERT_TRUE(parseSetupBanner(
      "# braid-perf all_reduce: 4 ranks = 4 processes x 1 thread x 1 GPU; 20 iterations (+5 warm-up) per size\n",
      &nranks, &setup));
  EXPECT_EQ(nranks, 4);
  EXPECT_EQ(setup, "4 ranks = 4 processes x 1 thread x 1 GPU");
  ASSERT_TRUE(
      parseSetupBanner("# braid-perf comm: 2 ranks, one process per GPU; 10 cycles (+1 warm-up)", &nranks, &setup));
  EXPECT_EQ(nranks, 2);
  EXPECT_EQ(setup, "2 ranks, one process per GPU");
  EXPECT_FALSE(
      parseSetupBanner("# braid-perf putsignal: the library lacks ncclPutSignal; nothing measured", &nranks, &setup));
  EXPECT_FALSE(parseSetupBanner("# library /x (NCCL version code 1)", &nranks, &setup));
}

TEST(PerfJson, LibraryBanner) {
  std::string path;
  int version = 0;
  ASSERT_TRUE(parseLibraryBanner("# library /a b/libnccl.so.2 (NCCL version code 22809)\n", &path, &version));
  EXPECT_EQ(path, "/a b/libnccl.so.2");
  EXPECT_EQ(version, 22809);
  EXPECT_FALSE(parseLibraryBanner("# library /x", &path, &version));
  EXPECT_FALSE(parseLibraryBanner("# braid-perf comm: 2 ranks, x", &path, &version));
}

}  // namespace
}  // namespace braidperf
