// braid-perf: measures (and, for the collectives, checks) NCCL operations through nccl.h only, so
// the same binary measures Braid and NVIDIA's NCCL. See DESIGN.md section 7.
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "comm_bench.h"
#include "compare.h"
#include "options.h"

namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[i];
}

const char* modeName(braidperf::RankMode m) {
  switch (m) {
    case braidperf::RankMode::kProcesses:
      return "one process per GPU";
    case braidperf::RankMode::kThreads:
      return "one thread per GPU";
    case braidperf::RankMode::kOneThread:
      return "one thread, all GPUs (ncclCommInitAll)";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  braidperf::Options opt;
  if (!braidperf::parseOptions(argc, argv, &opt)) return 2;
  if (!opt.compareLib.empty()) return braidperf::runCompare(argc, argv, opt);

  if (opt.nranks == 0) opt.nranks = braidperf::visibleGpuCount();
  if (opt.nranks < 1) {
    std::fprintf(stderr, "braid-perf: no GPU visible\n");
    return 1;
  }
  int version = 0;
  ncclGetVersion(&version);
  std::printf("# braid-perf %s: %d ranks, %s, %d cycles (+%d warm-up)\n# library %s (NCCL version code %d)\n",
              opt.op.c_str(), opt.nranks, modeName(opt.mode), opt.iters, opt.warmup, braidperf::loadedLibraryPath(),
              version);
  std::vector<braidperf::Metric> metrics;
  if (!braidperf::runCommBench(opt, &metrics)) return 1;

  std::printf("# %-16s %10s %10s %10s   (per cycle: slowest rank)\n", "metric", "median", "min", "max");
  for (const braidperf::Metric& m : metrics) {
    double med = percentile(m.perCycle, 0.5);
    std::printf("  %-16s %10.2f %10.2f %10.2f\n", m.name.c_str(), med, percentile(m.perCycle, 0),
                percentile(m.perCycle, 1));
    if (opt.csv) std::printf("csv,%s,%.4f\n", m.name.c_str(), med);
  }
  return 0;
}
