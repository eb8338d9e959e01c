// braid-perf comm: what a communicator costs. Per cycle, every rank creates a communicator
// (ncclCommInitRank, or ncclCommInitAll with -g), runs its first operation (an AllReduce of 1 MiB,
// where the libraries connect their peers) and destroys it; reported per cycle is the slowest
// rank's time and the largest device-memory growth (after init, and after the first AllReduce),
// then the median over cycles.
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace braidperf {

struct Metric {
  std::string name;  // e.g. "init_ms"
  std::vector<double> perCycle;
};

// Runs the benchmark; false if a rank failed.
bool runCommBench(const Options& opt, std::vector<Metric>* metrics);

// Visible GPUs, asked in a child process so that this process never initializes CUDA before it
// forks its ranks (CUDA does not survive fork).
int visibleGpuCount();

}  // namespace braidperf
