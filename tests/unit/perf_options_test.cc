// braid-perf's host logic: options, size sweep, rows, bus-bandwidth factors, the checker's inputs and
// expected values (against an independent reference), the report format and the rank launcher.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "coll.h"
#include "coll_check.h"
#include "launcher.h"
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

// ---- checker: an independent reference -----------------------------------------------------

// Round-to-nearest-even of x to a binary format with `mant` explicit mantissa bits (normal range).
double roundTo(double x, int mant) {
  if (x == 0 || mant >= 52) return x;
  int e = 0;
  double f = std::frexp(x, &e);  // x = f * 2^e, 0.5 <= |f| < 1
  return std::ldexp(std::nearbyint(std::ldexp(f, mant + 1)), e - mant - 1);
}

// The value of integer x in a two's-complement (or unsigned) type of `bytes` bytes.
double wrapInt(uint64_t x, size_t bytes, bool isSigned) {
  if (bytes < 8) x &= (uint64_t{1} << (8 * bytes)) - 1;
  if (isSigned && bytes < 8 && (x >> (8 * bytes - 1)) != 0) return static_cast<double>(x) - std::ldexp(1.0, 8 * bytes);
  return isSigned ? static_cast<double>(static_cast<int64_t>(x)) : static_cast<double>(x);
}

// The reduction of vals in the given order, rounding (or wrapping) after every step as a device would.
double refReduce(const TypeInfo& t, ncclRedOp_t op, const std::vector<double>& vals) {
  const double n = static_cast<double>(vals.size());
  if (!t.isFloat) {
    uint64_t acc = static_cast<uint64_t>(static_cast<int64_t>(vals[0]));
    for (size_t i = 1; i < vals.size(); i++) {
      uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(vals[i]));
      double a = wrapInt(acc, t.size, t.isSigned), b = vals[i];
      if (op == ncclSum || op == ncclAvg) acc += v;
      if (op == ncclProd) acc *= v;
      if (op == ncclMax) acc = static_cast<uint64_t>(static_cast<int64_t>(std::max(a, b)));
      if (op == ncclMin) acc = static_cast<uint64_t>(static_cast<int64_t>(std::min(a, b)));
    }
    double r = wrapInt(acc, t.size, t.isSigned);
    return op == ncclAvg ? std::trunc(r / n) : r;
  }
  if (op == ncclAvg) {  // NCCL: every input times 1/n rounded to the type, then a rounded sum
    double scale = roundTo(1.0 / n, t.mantissaBits), acc = 0;
    for (double v : vals) acc = roundTo(acc + roundTo(v * scale, t.mantissaBits), t.mantissaBits);
    return acc;
  }
  double acc = vals[0];
  for (size_t i = 1; i < vals.size(); i++) {
    double v = vals[i];
    acc = op == ncclSum ? acc + v : op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : std::min(acc, v);
    acc = roundTo(acc, t.mantissaBits);
  }
  return acc;
}

// mulsum: the values in rank order times each rank's scalar (exact: 2 or 0), to be summed.
std::vector<double> weighted(ncclRedOp_t op, std::vector<double> byRank) {
  if (op == kMulSum) {
    for (size_t r = 0; r < byRank.size(); r++) byRank[r] *= mulSumScalar(static_cast<int>(r));
  }
  return byRank;
}
ncclRedOp_t reduceOpOf(ncclRedOp_t op) { return op == kMulSum ? ncclSum : op; }

TEST(PerfCheck, ConversionsMatchKnownEncodings) {
  EXPECT_EQ(encodeValue(ncclFloat16, 1.0), 0x3C00u);
  EXPECT_EQ(encodeValue(ncclBfloat16, 1.0), 0x3F80u);
  EXPECT_EQ(encodeValue(ncclFloat8e4m3, 1.0), 0x38u);
  EXPECT_EQ(encodeValue(ncclFloat8e5m2, 1.0), 0x3Cu);
  EXPECT_EQ(encodeValue(ncclFloat8e4m3, -16.0), 0xD8u);
  EXPECT_EQ(encodeValue(ncclInt8, -1.0), 0xFFu);
  EXPECT_EQ(encodeValue(ncclUint32, 7.0), 7u);
  for (int t = 0; t < ncclNumTypes; t++) {
    const TypeInfo& info = typeInfo(static_cast<ncclDataType_t>(t));
    for (double v : {0.0, 1.0, 2.0, 3.0, 7.0, 8.0, 0.34375, 100.0, -64.0}) {
      if (!info.isFloat && (v != std::trunc(v) || (!info.isSigned && v < 0))) continue;
      uint64_t bits = encodeValue(info.type, v);
      double want = info.isFloat ? roundTo(v, info.mantissaBits) : v;
      if (info.type == ncclFloat8e4m3 && std::fabs(want) > 448) continue;
      EXPECT_EQ(decodeValue(info.type, &bits), want) << info.name << " " << v;
    }
  }
}

// For every type, op and rank count 2..8: every input is exact in its type, and the checker's
// expected value equals the reference reduction in every rank order (ring rotations, both
// directions); the float Avg lies within the checker's tolerance of the reference.
TEST(PerfCheck, ExpectedValuesForEveryTypeOpAndRankCount) {
  for (int type = 0; type < ncclNumTypes; type++) {
    const TypeInfo& t = typeInfo(static_cast<ncclDataType_t>(type));
    for (int op = 0; op <= kMulSum; op++) {
      for (int n = 2; n <= 8; n++) {
        CheckSpec spec;
        spec.type = t.type;
        spec.op = static_cast<ncclRedOp_t>(op);
        spec.nranks = n;
        Checker checker(spec);
        const bool exact = !t.isFloat || spec.op != ncclAvg;
        EXPECT_EQ(checker.tolerance() == 0, exact) << t.name << " " << opName(spec.op) << " n=" << n;
        std::vector<double> vals(n), ordered(n);
        bool allSame = true;
        for (size_t k = 0; k < kPatternPeriod; k++) {
          for (int r = 0; r < n; r++) {
            vals[r] = checker.inputValue(r, k);
            ASSERT_EQ(roundTo(vals[r], t.isFloat ? t.mantissaBits : 60), vals[r]) << t.name;
            ASSERT_LE(std::fabs(vals[r]), t.exactMax) << t.name;
            allSame = allSame && vals[r] == checker.inputValue(0, 0);
          }
          const std::vector<double> terms = weighted(spec.op, vals);
          for (int start = 0; start < n; start++) {
            for (int dir : {1, -1}) {
              for (int i = 0; i < n; i++) ordered[i] = terms[((start + dir * i) % n + n) % n];
              double ref = refReduce(t, reduceOpOf(spec.op), ordered);
              if (exact) {
                ASSERT_EQ(ref, checker.reducedValue(k)) << t.name << " " << opName(spec.op) << " n=" << n << " k=" << k;
              } else {
                ASSERT_LE(std::fabs(ref - checker.reducedValue(k)), checker.tolerance()) << t.name << " n=" << n;
              }
            }
          }
        }
        EXPECT_FALSE(allSame) << t.name << " " << opName(spec.op) << ": the pattern must vary";
      }
    }
  }
}

std::vector<uint8_t> encodeAll(ncclDataType_t type, const std::vector<double>& v) {
  size_t es = typeInfo(type).size;
  std::vector<uint8_t> out(v.size() * es);
  for (size_t i = 0; i < v.size(); i++) {
    uint64_t bits = encodeValue(type, v[i]);
    std::memcpy(&out[i * es], &bits, es);
  }
  return out;
}

// What each rank's receive region holds after a correct collective, computed from the definition.
std::vector<uint8_t> simulate(const CheckSpec& s, const std::vector<std::vector<double>>& in, int rank, bool inPlace) {
  const TypeInfo& t = typeInfo(s.type);
  const size_t c = s.count;
  std::vector<double> out;
  auto reduced = [&](size_t i) {
    std::vector<double> col;
    for (const std::vector<double>& r : in) col.push_back(r[i]);
    return refReduce(t, reduceOpOf(s.op), weighted(s.op, col));
  };
  switch (s.coll) {
    case Coll::kAllReduce:
      for (size_t i = 0; i < c; i++) out.push_back(reduced(i));
      break;
    case Coll::kBroadcast:
      out = in[s.root];
      break;
    case Coll::kReduce:
      if (rank != s.root && !inPlace) return std::vector<uint8_t>(c * t.size, kPoison);
      if (rank != s.root) out = in[rank];
      for (size_t i = 0; rank == s.root && i < c; i++) out.push_back(reduced(i));
      break;
    case Coll::kAllGather:
      for (const std::vector<double>& r : in) out.insert(out.end(), r.begin(), r.end());
      break;
    default:
      for (size_t i = 0; i < c; i++) out.push_back(reduced(rank * c + i));
      break;
  }
  return encodeAll(s.type, out);
}

TEST(PerfCheck, CountsWrongElementsOfEveryCollective) {
  const Coll colls[] = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter};
  for (Coll coll : colls) {
    for (int type = 0; type < ncclNumTypes; type++) {
      for (int op = 0; op < (collTraits(coll).hasOp ? kMulSum + 1 : 1); op++) {
        for (int n : {2, 3, 8}) {
          CheckSpec s;
          s.coll = coll;
          s.type = static_cast<ncclDataType_t>(type);
          s.op = static_cast<ncclRedOp_t>(op);
          s.nranks = n;
          s.root = n - 1;
          s.count = kPatternPeriod + 77;  // crosses the pattern's period
          const size_t es = typeInfo(s.type).size, sendN = sendElems(coll, s.count, n);
          Checker checker(s);
          std::vector<std::vector<double>> in(n);
          for (int r = 0; r < n; r++) {
            std::vector<uint8_t> bytes(sendN * es);
            checker.fillInput(r, bytes.data(), 0, sendN);
            for (size_t i = 0; i < sendN; i++) in[r].push_back(decodeValue(s.type, &bytes[i * es]));
            EXPECT_EQ(in[r][5], checker.inputValue(r, 5));
          }
          for (int rank = 0; rank < n; rank++) {
            for (bool inPlace : {false, true}) {
              std::vector<uint8_t> out = simulate(s, in, rank, inPlace);
              ASSERT_EQ(out.size(), recvElems(coll, s.count, n) * es);
              const std::string what = std::string(collTraits(coll).name) + " " + typeInfo(s.type).name + " " +
                                       opName(s.op) + " n=" + std::to_string(n) + " rank " + std::to_string(rank);
              ASSERT_EQ(checker.countWrong(rank, inPlace, out.data()), 0u) << what;
              // Corrupt the first and the last element: NaN for floats, a flipped bit for integers.
              for (size_t at : {size_t{0}, out.size() / es - 1}) {
                uint64_t bad = typeInfo(s.type).isFloat ? encodeValue(s.type, NAN) : (out[at * es] ^ 1u);
                std::memcpy(&out[at * es], &bad, typeInfo(s.type).isFloat ? es : 1);
              }
              EXPECT_EQ(checker.countWrong(rank, inPlace, out.data()), 2u) << what;
            }
          }
        }
      }
    }
  }
}

TEST(PerfCheck, PoisonGuards) {
  std::vector<uint8_t> guard(10, kPoison);
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 4), 0u);
  guard[1] = 0;
  guard[9] = 1;
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 4), 2u);  // element 0 and the short last one
  guard[2] = 0;
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 4), 2u);
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 1), 3u);
}

// ---- launcher ------------------------------------------------------------------------------

// Workers report {worker, first rank, cycle, first byte of that cycle's id}; steps must arrive in
// order, complete, in worker order, with one id per cycle shared by every worker.
void checkLauncher(const Layout& layout, int failWorker, int* stepsSeen, bool* ok) {
  LaunchConfig cfg;
  cfg.layout = layout;
  cfg.graceSec = 5;
  std::atomic<int> made{0};
  IdMaker makeId = [&made](ncclUniqueId* id) {
    std::memset(id, 0, sizeof(*id));
    id->internal[0] = static_cast<char>(40 + made++);
    return true;
  };
  WorkerBody body = [failWorker](const WorkerInfo& info, const IdSource& ids, const Emit& emit) {
    for (int cycle = 0; cycle < 3; cycle++) {
      if (info.worker == failWorker && cycle == 1) return false;
      ncclUniqueId id;
      if (!ids(cycle, &id)) return false;
      emit({double(info.worker), double(info.firstRank), double(cycle), double(id.internal[0])});
    }
    return true;
  };
  *stepsSeen = 0;
  OnStep onStep = [&](int step, const std::vector<std::vector<double>>& records) {
    EXPECT_EQ(step, *stepsSeen);
    ASSERT_EQ(static_cast<int>(records.size()), layout.workers());
    for (int w = 0; w < layout.workers(); w++) {
      EXPECT_EQ(records[w][0], w);
      EXPECT_EQ(records[w][1], w * layout.gpus);
      EXPECT_EQ(records[w][2], step);
      EXPECT_EQ(records[w][3], records[0][3]);
    }
    EXPECT_EQ(records[0][3], 40 + step);
    (*stepsSeen)++;
  };
  *ok = runWorkers(cfg, body, onStep, makeId);
}

TEST(PerfLauncher, StreamsStepsFromProcessesAndThreads) {
  for (Layout l : {Layout{1, 3, 1}, Layout{2, 2, 1}, Layout{3, 1, 2}}) {
    int steps = 0;
    bool ok = false;
    checkLauncher(l, -1, &steps, &ok);
    EXPECT_TRUE(ok);
    EXPECT_EQ(steps, 3) << l.procs << "x" << l.threads << "x" << l.gpus;
  }
}

TEST(PerfLauncher, AFailedWorkerFailsTheRunAfterTheStepsItReported) {
  for (Layout l : {Layout{1, 2, 1}, Layout{2, 2, 1}}) {
    int steps = 0;
    bool ok = true;
    checkLauncher(l, 1, &steps, &ok);
    EXPECT_FALSE(ok);
    EXPECT_EQ(steps, 1) << l.procs << "x" << l.threads;
  }
}

}  // namespace
}  // namespace braidperf
