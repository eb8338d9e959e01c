// Command line of braid-perf. Flags follow nccl-tests where they overlap.
#pragma once

#include <string>

namespace braidperf {

enum class RankMode { kProcesses, kThreads, kOneThread };

struct Options {
  std::string op;  // "comm" (more arrive with the collectives)
  RankMode mode = RankMode::kProcesses;
  int nranks = 0;          // 0: every visible GPU
  int iters = 10;          // -n: measured cycles / iterations
  int warmup = 1;          // -w
  bool csv = false;        // machine-readable output for --compare
  std::string compareLib;  // --compare PATH: also run against this libnccl.so.2 and print ratios
  int runs = 3;            // --runs: fresh processes per library in --compare (median taken)
};

// Parses argv; prints usage and returns false on bad input.
bool parseOptions(int argc, char** argv, Options* out);
void printUsage(const char* argv0);

}  // namespace braidperf
