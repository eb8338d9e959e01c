// braid-perf: measures (and, for the collectives, checks) NCCL operations through nccl.h only, so
// the same binary measures Braid and NVIDIA's NCCL. Output columns are nccl-tests' (size count type
// redop root time algbw busbw #wrong, out of place and in place); README.md, "braid-perf", lists its options.
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "coll_bench.h"
#include "comm_bench.h"
#include "compare.h"
#include "options.h"

namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[i];
}

std::string modeName(const braidperf::Layout& l) {
  if (l.procs > 1) return "one process per GPU";
  if (l.gpus > 1) return "one thread, all GPUs (ncclCommInitAll)";
  return l.threads > 1 ? "one thread per GPU" : "one rank";
}

int runComm(const braidperf::Options& opt) {
  const std::string setup = std::to_string(opt.layout.nranks()) + " ranks, " + modeName(opt.layout);
  std::printf("# braid-perf comm: %s; %d cycles (+%d warm-up)\n", setup.c_str(), opt.iters, opt.warmup);
  std::vector<braidperf::Metric> metrics;
  if (!braidperf::runCommBench(opt, &metrics)) return 1;
  std::printf("# %-16s %10s %10s %10s   (per cycle: slowest rank)\n", "metric", "median", "min", "max");
  braidperf::PerfReport report =
      braidperf::singleLibraryReport(opt, opt.layout.nranks(), setup, braidperf::loadedLibrary());
  for (const braidperf::Metric& m : metrics) {
    double med = percentile(m.perCycle, 0.5);
    std::printf("  %-16s %10.2f %10.2f %10.2f\n", m.name.c_str(), med, percentile(m.perCycle, 0),
                percentile(m.perCycle, 1));
    if (opt.csv) std::printf("csv,%s,%.4f\n", m.name.c_str(), med);
    report.metrics.push_back(braidperf::JsonMetric{m.name, {med}});
  }
  return opt.jsonPath.empty() || braidperf::writeJsonReport(opt.jsonPath, report) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help"))) {
    braidperf::printUsage(argv[0]);
    return 0;
  }
  braidperf::Options opt;
  if (!braidperf::parseOptions(argc, argv, &opt)) return 2;
  if (!opt.compareLib.empty()) return braidperf::runCompare(argc, argv, opt);

  // Asked in a child process: CUDA must not be initialized here before the ranks are forked.
  std::string why;
  if (!braidperf::resolveLayout(&opt, braidperf::visibleGpuCount(), &why)) {
    std::fprintf(stderr, "braid-perf: %s\n", why.c_str());
    return 1;
  }
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) version = 0;
  std::printf("# library %s (NCCL version code %d)\n", braidperf::loadedLibraryPath(), version);
  return opt.isComm ? runComm(opt) : braidperf::runCollBench(opt);
}
