// braid-perf's host logic: options, size sweep, rows, bus-bandwidth factors and the report format.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coll.h"
#include "options.h"
#include "perf_test_util.h"
#include "report.h"

namespace braidperf {
namespace {

TEST(PerfOptions, SizesWithSuffixes) {
  size_t v = 0;
  EXPECT_TRUE(parseSize("8", &v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseSize("64K", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parseSize("16m", &v));
  EXPECT_EQ(v, size_t{16} << 20);
  EXPECT_TRUE(parseSize("1G", &v));
  EXPECT_EQ(v, size_t{1} << 30);
  EXPECT_TRUE(parseSize("0", &v));
  EXPECT_EQ(v, 0u);
  for (const char* bad : {"", "K", "1.5M", "12X", "-1", "1GB", "2000G", " 8", "99999999999999"}) {
    EXPECT_FALSE(parseSize(bad, &v)) << bad;
  }
}

TEST(PerfOptions, TypesAndOps) {
  std::vector<ncclDataType_t> types;
  ASSERT_TRUE(parseTypeList("all", &types));
  EXPECT_EQ(types.size(), 12u);
  ASSERT_TRUE(parseTypeList("char,half,bf16,fp8_e4m3,f8e5m2,double", &types));
  EXPECT_EQ(types, (std::vector<ncclDataType_t>{ncclInt8, ncclFloat16, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2,
                                                ncclFloat64}));
  EXPECT_FALSE(parseTypeList("float,complex", &types));
  EXPECT_FALSE(parseTypeList("", &types));
  for (int t = 0; t < ncclNumTypes; t++) {  // every printed name parses back (the csv rows rely on it)
    ncclDataType_t back;
    ASSERT_TRUE(parseType(typeInfo(static_cast<ncclDataType_t>(t)).name, &back));
    EXPECT_EQ(back, t);
  }
  std::vector<ncclRedOp_t> ops;
  ASSERT_TRUE(parseOpList("all", &ops));
  EXPECT_EQ(ops.size(), 6u);  // with mulsum, as nccl-tests
  ASSERT_TRUE(parseOpList("max,avg,mulsum", &ops));
  EXPECT_EQ(ops, (std::vector<ncclRedOp_t>{ncclMax, ncclAvg, kMulSum}));
  EXPECT_STREQ(opName(kMulSum), "mulsum");
  EXPECT_FALSE(parseOpList("mean", &ops));
}

TEST(PerfOptions, CommandLines) {
  Options o;
  ASSERT_TRUE(
      parse({"all_reduce", "-b", "8", "-e", "1G", "-f", "4", "-p", "-d", "all", "-o", "sum,max", "-c", "0"}, &o));
  EXPECT_EQ(o.coll, Coll::kAllReduce);
  EXPECT_EQ(o.maxBytes, size_t{1} << 30);
  EXPECT_EQ(o.stepFactor, 4);
  EXPECT_TRUE(o.procFlag);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.types.size(), 12u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_EQ(o.graphLaunches, 0);
  Options g;
  ASSERT_TRUE(parse({"all_reduce", "-G", "10"}, &g));
  EXPECT_EQ(g.graphLaunches, 10);
  Options b;
  ASSERT_TRUE(parse({"broadcast", "-o", "all", "-r", "1", "-t", "2", "-g", "2", "-n", "7", "-w", "0"}, &b));
  EXPECT_EQ(b.ops.size(), 1u);  // no reduction: one pass per type
  EXPECT_EQ(b.threadsArg, 2);
  EXPECT_EQ(b.gpusArg, 2);
  EXPECT_EQ(b.root, 1);
  Options c;
  ASSERT_TRUE(parse({"comm", "-g", "-N", "4"}, &c));  // the older comm form: -g without a count
  EXPECT_TRUE(c.isComm);
  EXPECT_EQ(c.gpusArg, kAllGpus);
  EXPECT_EQ(c.iters, 10);
  Options d;
  ASSERT_TRUE(parse({"allgather", "-i", "1M", "-b", "1M", "-e", "4M"}, &d));
  EXPECT_EQ(d.coll, Coll::kAllGather);
  EXPECT_EQ(d.op, "all_gather");
  using Args = std::initializer_list<const char*>;
  for (Args bad : {Args{"all_reduse"}, Args{"send_recv_x"}, Args{"all_reduce", "-b", "1X"},
                   Args{"all_reduce", "-b", "8", "-e", "4"}, Args{"all_reduce", "-f", "2", "-i", "1M"},
                   Args{"all_reduce", "-c", "2"}, Args{"all_reduce", "-z", "1"}, Args{"all_reduce", "-b"},
                   Args{"all_reduce", "-d", "float128"}, Args{"all_reduce", "--bogus"}, Args{"all_reduce", "-n", "0"},
                   Args{"all_reduce", "-G", "-1"}, Args{"all_reduce", "-R", "3"}, Args{"all_reduce", "-a", "4"},
                   Args{"-b", "8"}}) {
    Options x;
    EXPECT_FALSE(parse(bad, &x)) << *bad.begin() << " ...";
  }
}

// Every option is a word of its own with its value in the next word: the forms getopt_long would
// also take ("-b8", "-pc 1", "--runs=3", "--ru") are refused, as are operands and "--".
TEST(PerfOptions, EveryFlagAndOnlyWholeWords) {
  Options o;
  ASSERT_TRUE(parse({"reduce",    "-N",        "2",   "-b",      "1K", "-e",    "1M",        "-i",      "4K", "-d",
                     "int8,half", "-o",        "max", "-r",      "1",  "-n",    "3",         "-w",      "0",  "-G",
                     "2",         "-c",        "0",   "-R",      "2",  "-a",    "1",         "-z",      "0",  "--runs",
                     "5",         "--timeout", "60",  "--hosts", "2",  "--csv", "--compare", "-lib.so", "-t", "-p"},
                    &o));
  EXPECT_EQ(o.nranks, 2);
  EXPECT_EQ(o.minBytes, 1024u);
  EXPECT_EQ(o.maxBytes, size_t{1} << 20);
  EXPECT_EQ(o.stepBytes, 4096u);
  EXPECT_EQ(o.types, (std::vector<ncclDataType_t>{ncclInt8, ncclFloat16}));
  EXPECT_EQ(o.ops, (std::vector<ncclRedOp_t>{ncclMax}));
  EXPECT_EQ(o.root, 1);
  EXPECT_EQ(o.iters, 3);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.graphLaunches, 2);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.registration, 2);
  EXPECT_EQ(o.average, 1);
  EXPECT_EQ(o.runs, 5);
  EXPECT_EQ(o.timeoutSec, 60);
  EXPECT_EQ(o.hosts, 2);
  EXPECT_TRUE(o.csv);
  EXPECT_EQ(o.compareLib, "-lib.so");  // a value is the next word, whatever it looks like
  EXPECT_EQ(o.threadsArg, kAllGpus);   // -t followed by a flag: no count
  EXPECT_TRUE(o.procFlag);

  Options again;  // a second parse starts afresh
  ASSERT_TRUE(parse({"all_reduce", "-t", "2", "-g"}, &again));
  EXPECT_EQ(again.threadsArg, 2);
  EXPECT_EQ(again.gpusArg, kAllGpus);
  EXPECT_FALSE(again.procFlag);

  struct Refused {
    std::initializer_list<const char*> args;
    const char* message;
  };
  const Refused refused[] = {
      {{"all_reduce", "-b8"}, "unknown option '-b8'"},
      {{"all_reduce", "-pc", "1"}, "unknown option '-pc'"},
      {{"all_reduce", "--runs=3"}, "unknown option '--runs=3'"},
      {{"all_reduce", "--ru", "3"}, "unknown option '--ru'"},
      {{"all_reduce", "--csv=1"}, "unknown option '--csv=1'"},
      {{"all_reduce", "-t3"}, "unknown option '-t3'"},
      {{"all_reduce", "--"}, "unknown option '--'"},
      {{"all_reduce", "-"}, "unknown option '-'"},
      {{"all_reduce", "-p", "extra"}, "unknown option 'extra'"},
      {{"all_reduce", "-x"}, "unknown option '-x'"},
      {{"all_reduce", "-t", "-5"}, "unknown option '-5'"},
      {{"all_reduce", "--hosts"}, "--hosts needs a value"},
      {{"all_reduce", "-e"}, "-e needs a value"},
      {{"all_reduce", "-b", "-e"}, "bad value '-e' for -b"},
      {{"all_reduce", "-t", "0"}, "bad value '0' for -t (expected a count from 1)"},
      {{"all_reduce", "-z", "1"}, "bad value '1' for -z (expected 0 (blocking mode is not supported))"},
  };
  for (const Refused& r : refused) {
    Options x;
    testing::internal::CaptureStderr();
    EXPECT_FALSE(parse(r.args, &x)) << r.message;
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(r.message), std::string::npos) << err;
  }
}

TEST(PerfOptions, Layouts) {
  std::string why;
  Options p;
  ASSERT_TRUE(parse({"all_reduce"}, &p));
  ASSERT_TRUE(resolveLayout(&p, 4, &why)) << why;  // default: one process per visible GPU
  EXPECT_EQ(p.layout.procs, 4);
  EXPECT_EQ(p.layout.nranks(), 4);
  Options t;
  ASSERT_TRUE(parse({"all_reduce", "-t", "2", "-g", "1"}, &t));
  ASSERT_TRUE(resolveLayout(&t, 4, &why)) << why;  // nccl-tests: exactly T x G ranks
  EXPECT_EQ(t.layout.procs, 1);
  EXPECT_EQ(t.layout.nranks(), 2);
  Options g;
  ASSERT_TRUE(parse({"comm", "-g", "-N", "4"}, &g));
  ASSERT_TRUE(resolveLayout(&g, 8, &why)) << why;
  EXPECT_EQ(g.layout.gpus, 4);
  EXPECT_EQ(g.layout.threads, 1);
  Options tAll;
  ASSERT_TRUE(parse({"comm", "-t"}, &tAll));
  ASSERT_TRUE(resolveLayout(&tAll, 3, &why)) << why;
  EXPECT_EQ(tAll.layout.threads, 3);
  Options pg;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-g", "2"}, &pg));
  ASSERT_TRUE(resolveLayout(&pg, 4, &why)) << why;
  EXPECT_EQ(pg.layout.procs, 2);
  EXPECT_EQ(pg.layout.gpus, 2);
  Options tooMany;
  ASSERT_TRUE(parse({"all_reduce", "-t", "4", "-g", "2"}, &tooMany));
  EXPECT_FALSE(resolveLayout(&tooMany, 4, &why));
  Options odd;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-t", "2", "-N", "3"}, &odd));
  EXPECT_FALSE(resolveLayout(&odd, 4, &why));
  Options root;
  ASSERT_TRUE(parse({"reduce", "-r", "4"}, &root));
  EXPECT_FALSE(resolveLayout(&root, 4, &why));
  Options none;
  ASSERT_TRUE(parse({"all_reduce"}, &none));
  EXPECT_FALSE(resolveLayout(&none, 0, &why));
  // --hosts: NCCL_HOSTID is per process, so hosts must split the processes evenly.
  Options hosts;
  ASSERT_TRUE(parse({"all_reduce", "-p", "--hosts", "2"}, &hosts));
  ASSERT_TRUE(resolveLayout(&hosts, 4, &why)) << why;
  EXPECT_EQ(hosts.layout.hosts, 2);
  Options oddHosts;
  ASSERT_TRUE(parse({"all_reduce", "-p", "--hosts", "3"}, &oddHosts));
  EXPECT_FALSE(resolveLayout(&oddHosts, 4, &why));
  EXPECT_NE(why.find("--hosts"), std::string::npos) << why;
  Options threadHosts;
  ASSERT_TRUE(parse({"all_reduce", "-t", "4", "--hosts", "2"}, &threadHosts));
  EXPECT_FALSE(resolveLayout(&threadHosts, 4, &why));
}

// With fewer GPUs than ranks, emulated hosts share them: rank r on GPU r % GPUs, each host's ranks
// on distinct GPUs; without --hosts, or with hosts larger than the GPUs, it is refused.
TEST(PerfOptions, EmulatedHostsShareGpus) {
  std::string why;
  Options fourOnOne;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-N", "4", "--hosts", "4"}, &fourOnOne));
  ASSERT_TRUE(resolveLayout(&fourOnOne, 1, &why)) << why;
  EXPECT_EQ(fourOnOne.layout.sharedGpus, 1);
  for (int r = 0; r < 4; r++) EXPECT_EQ(fourOnOne.layout.deviceOf(r), 0);
  Options twoByTwo;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-N", "4", "--hosts", "2"}, &twoByTwo));
  ASSERT_TRUE(resolveLayout(&twoByTwo, 2, &why)) << why;
  EXPECT_EQ(twoByTwo.layout.deviceOf(2), 0);
  EXPECT_EQ(twoByTwo.layout.deviceOf(3), 1);
  Options ownGpus;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-N", "4", "--hosts", "2"}, &ownGpus));
  ASSERT_TRUE(resolveLayout(&ownGpus, 4, &why)) << why;
  EXPECT_EQ(ownGpus.layout.sharedGpus, 0);
  EXPECT_EQ(ownGpus.layout.deviceOf(3), 3);
  Options noHosts;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-N", "2"}, &noHosts));
  EXPECT_FALSE(resolveLayout(&noHosts, 1, &why));
  EXPECT_NE(why.find("1 visible"), std::string::npos) << why;
  Options bigHosts;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-N", "4", "--hosts", "2"}, &bigHosts));
  EXPECT_FALSE(resolveLayout(&bigHosts, 1, &why));
  Options oddGpus;
  ASSERT_TRUE(parse({"all_reduce", "-p", "-N", "4", "--hosts", "2"}, &oddGpus));
  EXPECT_FALSE(resolveLayout(&oddGpus, 3, &why));
}

TEST(PerfOptions, SweepAndRows) {
  Options o;
  ASSERT_TRUE(parse({"all_reduce", "-b", "8", "-e", "1G", "-f", "4"}, &o));
  std::vector<size_t> sizes = sweepSizes(o);
  ASSERT_EQ(sizes.size(), 14u);  // 2^3, 2^5, ... 2^29
  EXPECT_EQ(sizes.front(), 8u);
  EXPECT_EQ(sizes.back(), size_t{1} << 29);
  Options a;
  ASSERT_TRUE(parse({"all_reduce", "-b", "1M", "-e", "4M", "-i", "1M"}, &a));
  EXPECT_EQ(sweepSizes(a), (std::vector<size_t>{1 << 20, 2 << 20, 3 << 20, 4 << 20}));
  Options one;
  ASSERT_TRUE(parse({"all_reduce", "-b", "1K", "-e", "1K", "-f", "1"}, &one));
  EXPECT_EQ(sweepSizes(one).size(), 1u);

  Options ag;
  ASSERT_TRUE(parse({"all_gather", "-b", "8", "-e", "1K", "-f", "128", "-d", "float,int8"}, &ag));
  std::vector<RowSpec> rows = planRows(ag, 4);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].count, 0u);  // 8 B cannot give every one of 4 ranks a float
  EXPECT_EQ(rows[0].bytes, 0u);
  EXPECT_EQ(rows[1].count, 64u);  // 1 KiB of output = 64 floats from each of 4 ranks
  EXPECT_EQ(rows[1].bytes, 1024u);
  EXPECT_EQ(rows[2].count, 2u);
  EXPECT_EQ(rows[2].bytes, 8u);
  EXPECT_EQ(rows[0].root, -1);
  Options ar;
  ASSERT_TRUE(parse({"reduce", "-b", "10", "-e", "10", "-d", "all", "-o", "all", "-r", "2"}, &ar));
  rows = planRows(ar, 3);
  ASSERT_EQ(rows.size(), 72u);    // 12 types x 6 ops
  EXPECT_EQ(rows[0].count, 10u);  // int8
  EXPECT_EQ(rows[0].root, 2);
  EXPECT_EQ(rows[6 * 2].count, 2u);  // int32: rounded down to whole elements
  EXPECT_EQ(rows[6 * 2].bytes, 8u);
}

TEST(PerfOptions, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::kReduce, 8), 1.0);
  RowSpec s;
  s.coll = Coll::kAllReduce;
  s.bytes = size_t{1} << 30;
  Timing t;
  t.us = 4533;
  setBandwidth(s, 4, &t);
  EXPECT_NEAR(t.algbw, 236.87, 0.01);  // nccl-tests: 1 GiB all_reduce in 4533 us on 4 GPUs
  EXPECT_NEAR(t.busbw, 355.30, 0.01);
}

TEST(PerfReport, RowsCsvAndCombination) {
  RowSpec s;
  s.coll = Coll::kReduceScatter;
  s.type = ncclBfloat16;
  s.op = ncclMin;
  s.bytes = 4096;
  s.count = 512;
  // Two workers: {oop us, oop wrong, ip us, ip wrong}.
  RowResult max = combineRecords(s, 4, 3, {{10, 0, 20, 1}, {30, 2, 5, 0}});
  EXPECT_DOUBLE_EQ(max.oop.us, 30);
  EXPECT_DOUBLE_EQ(max.ip.us, 20);
  EXPECT_EQ(max.oop.wrong, 2);
  EXPECT_EQ(max.ip.wrong, 1);
  EXPECT_DOUBLE_EQ(combineRecords(s, 4, 0, {{10, -1, 20, -1}, {30, -1, 5, -1}}).oop.us, 10);
  EXPECT_DOUBLE_EQ(combineRecords(s, 4, 1, {{10, -1, 20, -1}, {30, -1, 5, -1}}).oop.us, 20);
  RowResult unchecked = combineRecords(s, 4, 2, {{10, -1, 20, -1}, {30, -1, 5, -1}});
  EXPECT_DOUBLE_EQ(unchecked.ip.us, 5);
  EXPECT_EQ(unchecked.oop.wrong, -1);
  EXPECT_NE(formatRow(unchecked).find("N/A"), std::string::npos);
  EXPECT_NE(formatRow(max).find("bfloat16"), std::string::npos);

  RowResult back;
  ASSERT_TRUE(parseCsvRow(formatCsvRow(max) + "\n", &back));
  EXPECT_EQ(back.spec.coll, s.coll);
  EXPECT_EQ(back.spec.type, s.type);
  EXPECT_EQ(back.spec.op, s.op);
  EXPECT_EQ(back.spec.bytes, s.bytes);
  EXPECT_EQ(back.spec.count, s.count);
  EXPECT_DOUBLE_EQ(back.oop.us, 30);
  EXPECT_EQ(back.ip.wrong, 1);
  EXPECT_NEAR(back.oop.busbw, max.oop.busbw, 1e-3);
  EXPECT_FALSE(parseCsvRow("csv,init_ms,12.5", &back));
  EXPECT_FALSE(parseCsvRow("csv,row,all_reduce,float,sum,-1,8,2,1.0", &back));
  EXPECT_FALSE(parseCsvRow(formatCsvRow(max) + ",junk", &back));

  Summary sum;
  sum.add(max);
  sum.add(unchecked);
  EXPECT_EQ(sum.wrong(), 3);
}

}  // namespace
}  // namespace braidperf
