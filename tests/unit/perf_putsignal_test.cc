// braid-perf's one-sided operation (putsignal), its host side: the name and row computation, the
// check of what rank - 1 put, rows the library refused to capture, the line of a library without
// one-sided operations, and the run-time lookup of the functions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "coll.h"
#include "coll_check.h"
#include "one_sided.h"
#include "options.h"
#include "perf_test_util.h"
#include "report.h"

namespace braidperf {
namespace {

TEST(PerfPutSignal, NameTraitsAndBandwidth) {
  Coll c = Coll::kAllReduce;
  ASSERT_TRUE(parseColl("putsignal", &c));
  EXPECT_EQ(c, Coll::kPutSignal);
  c = Coll::kAllReduce;
  ASSERT_TRUE(parseColl("put_signal", &c));  // underscores are optional, as for every operation
  EXPECT_EQ(c, Coll::kPutSignal);
  EXPECT_FALSE(parseColl("put", &c));
  const CollTraits& t = collTraits(Coll::kPutSignal);
  EXPECT_EQ(t.coll, Coll::kPutSignal);
  EXPECT_STREQ(t.name, "putsignal");
  EXPECT_FALSE(t.hasOp);
  EXPECT_FALSE(t.hasRoot);
  EXPECT_FALSE(t.sizeIsTotal);
  EXPECT_TRUE(isOneSided(Coll::kPutSignal));
  for (Coll other : {Coll::kAllReduce, Coll::kSendRecv, Coll::kAllToAll, Coll::kScatter}) {
    EXPECT_FALSE(isOneSided(other));
  }
  EXPECT_FALSE(hasInPlace(Coll::kPutSignal));  // a ring shift: both columns out of place
  for (int n : {1, 2, 3, 8}) EXPECT_DOUBLE_EQ(busBwFactor(Coll::kPutSignal, n), 1.0);
  EXPECT_EQ(sendElems(Coll::kPutSignal, 100, 8), 100u);
  EXPECT_EQ(recvElems(Coll::kPutSignal, 100, 8), 100u);
}

TEST(PerfPutSignal, CommandLineAndRows) {
  Options o;
  ASSERT_TRUE(parse({"put_signal", "-b", "8", "-e", "256M", "-f", "4",  "-d", "float,int8", "-o",
                     "max",        "-r", "3", "-G", "5",    "-p", "-N", "2",  "--hosts",    "2"},
                    &o));
  EXPECT_EQ(o.op, "putsignal");  // printed with its canonical name
  EXPECT_FALSE(o.isComm);
  EXPECT_EQ(o.coll, Coll::kPutSignal);
  EXPECT_EQ(o.graphLaunches, 5);
  ASSERT_EQ(o.ops.size(), 1u);  // no reduction: one pass per type
  std::string why;
  ASSERT_TRUE(resolveLayout(&o, 1, &why)) << why;  // two emulated hosts on one GPU
  EXPECT_EQ(o.layout.nranks(), 2);
  EXPECT_EQ(o.layout.hosts, 2);
  EXPECT_EQ(o.layout.sharedGpus, 1);
  const std::vector<RowSpec> rows = planRows(o, 2);
  ASSERT_EQ(rows.size(), 2u * 13u);  // 8 B .. 256 MiB by 4: 13 sizes, two types
  EXPECT_EQ(rows[0].bytes, 8u);
  EXPECT_EQ(rows[0].count, 2u);                  // floats
  EXPECT_EQ(rows[12].bytes, size_t{128} << 20);  // 8 * 4^12: the next step passes 256M
  EXPECT_EQ(rows[13].type, ncclInt8);
  EXPECT_EQ(rows[13].count, 8u);
  for (const RowSpec& r : rows) {
    EXPECT_EQ(r.coll, Coll::kPutSignal);
    EXPECT_EQ(r.root, -1);  // -r does not apply
    EXPECT_EQ(r.bytes, r.count * typeInfo(r.type).size);
  }
  // Sizes that are not whole elements round down, as for sendrecv.
  Options odd;
  ASSERT_TRUE(parse({"putsignal", "-b", "10", "-e", "10", "-d", "double"}, &odd));
  const std::vector<RowSpec> oddRows = planRows(odd, 4);
  ASSERT_EQ(oddRows.size(), 1u);
  EXPECT_EQ(oddRows[0].count, 1u);
  EXPECT_EQ(oddRows[0].bytes, 8u);
  Options bad;
  EXPECT_FALSE(parse({"putsignals"}, &bad));
}

TEST(PerfPutSignal, ChecksWhatTheRankBeforePut) {
  for (int type = 0; type < ncclNumTypes; type++) {
    for (int n : {1, 2, 5}) {
      CheckSpec s;
      s.coll = Coll::kPutSignal;
      s.type = static_cast<ncclDataType_t>(type);
      s.nranks = n;
      s.count = kPatternPeriod + 9;
      const size_t es = typeInfo(s.type).size;
      Checker checker(s);
      for (int rank = 0; rank < n; rank++) {
        const int prev = (rank + n - 1) % n;
        std::vector<uint8_t> got(s.count * es);
        checker.fillInput(prev, got.data(), 0, s.count);
        const std::string what =
            std::string(typeInfo(s.type).name) + " n=" + std::to_string(n) + " rank " + std::to_string(rank);
        EXPECT_EQ(checker.countWrong(rank, false, got.data()), 0u) << what;
        if (n > 1) {  // another rank's data is wrong (the patterns differ per rank)
          std::vector<uint8_t> own(s.count * es);
          checker.fillInput(rank, own.data(), 0, s.count);
          EXPECT_GT(checker.countWrong(rank, false, own.data()), s.count / 2) << what;
        }
        got[es * 7] ^= 0x40;  // one element changed
        EXPECT_EQ(checker.countWrong(rank, false, got.data()), 1u) << what;
        std::vector<uint8_t> poisoned(s.count * es, kPoison);  // nothing arrived
        EXPECT_EQ(checker.countWrong(rank, false, poisoned.data()), s.count) << what;
      }
    }
  }
}

TEST(PerfPutSignal, RefusedRows) {
  RowSpec s;
  s.coll = Coll::kPutSignal;
  s.type = ncclFloat32;
  s.bytes = 1 << 20;
  s.count = s.bytes / 4;
  // Every rank reports the refusal (they agree on it); a refused column has no time or bandwidth.
  for (int average = 0; average < 4; average++) {
    RowResult row = combineRecords(s, 2, average, {{kRefusedUs, 0, kRefusedUs, 0}, {kRefusedUs, 0, kRefusedUs, 0}});
    EXPECT_LT(row.oop.us, 0) << average;
    EXPECT_EQ(row.oop.algbw, 0);
    EXPECT_EQ(row.oop.wrong, 0);
  }
  RowResult refused = combineRecords(s, 2, 3, {{kRefusedUs, -1, kRefusedUs, -1}, {kRefusedUs, -1, kRefusedUs, -1}});
  // A rank that did not report it still makes the row refused (mean or min must not look like a time).
  EXPECT_LT(combineRecords(s, 2, 1, {{10, -1, 10, -1}, {kRefusedUs, -1, kRefusedUs, -1}}).oop.us, 0);
  const std::string text = formatRow(refused);
  EXPECT_NE(text.find("refused"), std::string::npos) << text;
  EXPECT_NE(text.find("float"), std::string::npos) << text;
  RowResult back;
  ASSERT_TRUE(parseCsvRow(formatCsvRow(refused), &back));
  EXPECT_EQ(back.spec.coll, Coll::kPutSignal);
  EXPECT_LT(back.oop.us, 0);
  EXPECT_LT(back.ip.us, 0);

  RowResult measured = combineRecords(s, 2, 3, {{100, 0, 50, 0}, {80, 0, 40, 0}});
  EXPECT_DOUBLE_EQ(measured.oop.algbw, (1 << 20) / 1e3 / 100);
  EXPECT_DOUBLE_EQ(measured.oop.busbw, measured.oop.algbw);  // factor 1
  Summary summary;
  summary.add(measured);
  summary.add(refused);
  EXPECT_EQ(summary.refused(), 1);
  EXPECT_EQ(summary.wrong(), 0);
  char buf[1024] = {};
  FILE* out = fmemopen(buf, sizeof(buf) - 1, "w");
  ASSERT_NE(out, nullptr);
  summary.print(out);
  std::fclose(out);
  const std::string printed = buf;
  EXPECT_NE(printed.find("Refused            : 1 of 2 sizes"), std::string::npos) << printed;
  // The average bus bandwidth is over the measured columns only.
  char avg[64];
  std::snprintf(avg, sizeof(avg), "Avg bus bandwidth    : %g", (measured.oop.busbw + measured.ip.busbw) / 2);
  EXPECT_NE(printed.find(avg), std::string::npos) << printed;
}

TEST(PerfPutSignal, LibraryWithoutOneSidedOperations) {
  const std::string why = noOneSidedText({"ncclPutSignal", "ncclWaitSignal"});
  EXPECT_EQ(why,
            "the library has no one-sided operations (NCCL < 2.29): it does not export ncclPutSignal, "
            "ncclWaitSignal");
  std::string back;
  ASSERT_TRUE(parseUnsupportedCsv(formatUnsupportedCsv(why) + "\r\n", &back));
  EXPECT_EQ(back, why);
  EXPECT_FALSE(parseUnsupportedCsv("csv,row,putsignal,float,none,-1,8,2,1,1,1,0,1,1,1,0", &back));
  RowResult row;
  EXPECT_FALSE(parseCsvRow(formatUnsupportedCsv(why), &row));
}

TEST(PerfPutSignal, FunctionsFoundByName) {
  int marker[4] = {};
  std::map<std::string, void*> all = {{"ncclCommWindowRegister", &marker[0]},
                                      {"ncclCommWindowDeregister", &marker[1]},
                                      {"ncclPutSignal", &marker[2]},
                                      {"ncclWaitSignal", &marker[3]}};
  auto from = [](const std::map<std::string, void*>& syms) {
    return [&syms](const char* name) -> void* {
      auto it = syms.find(name);
      return it == syms.end() ? nullptr : it->second;
    };
  };
  OneSidedApi api;
  EXPECT_TRUE(resolveOneSided(from(all), &api).empty());
  EXPECT_EQ(reinterpret_cast<void*>(api.windowRegister), &marker[0]);
  EXPECT_EQ(reinterpret_cast<void*>(api.windowDeregister), &marker[1]);
  EXPECT_EQ(reinterpret_cast<void*>(api.putSignal), &marker[2]);
  EXPECT_EQ(reinterpret_cast<void*>(api.waitSignal), &marker[3]);
  // A library with windows but no one-sided operations (NCCL 2.27, 2.28).
  std::map<std::string, void*> windowsOnly = {{"ncclCommWindowRegister", &marker[0]},
                                              {"ncclCommWindowDeregister", &marker[1]}};
  OneSidedApi old;
  const std::vector<std::string> missing = resolveOneSided(from(windowsOnly), &old);
  EXPECT_EQ(missing, (std::vector<std::string>{"ncclPutSignal", "ncclWaitSignal"}));
  EXPECT_EQ(old.putSignal, nullptr);
  std::map<std::string, void*> none;
  EXPECT_EQ(resolveOneSided(from(none), &old).size(), 4u);
}

}  // namespace
}  // namespace braidperf
