#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braidperf {

void printUsage(const char* argv0) {
  std::printf(
      "usage: %s OP [options]\n"
      "  OP            comm: communicator cost (ncclCommInitRank / ncclCommDestroy time, device memory)\n"
      "  -p            one process per GPU (default)\n"
      "  -t            one thread per GPU in one process\n"
      "  -g            one thread drives all GPUs (ncclCommInitAll)\n"
      "  -N NRANKS     number of ranks/GPUs (default: all visible GPUs)\n"
      "  -n ITERS      measured cycles (default 10)\n"
      "  -w WARMUP     warm-up cycles, not measured (default 1)\n"
      "  --compare LIB run the same benchmark against another libnccl.so.2 and print the ratio\n"
      "  --runs R      with --compare: R fresh runs per library, alternating; medians across runs (3)\n"
      "  --csv         machine-readable output\n",
      argv0);
}

bool parseOptions(int argc, char** argv, Options* out) {
  if (argc < 2 || argv[1][0] == '-') {
    printUsage(argv[0]);
    return false;
  }
  out->op = argv[1];
  for (int i = 2; i < argc; i++) {
    const char* a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "braid-perf: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    auto intValue = [&](const char* flag, int* dst, int lo) {
      const char* v = value(flag);
      if (v == nullptr) return false;
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < lo || n > 1000000) {
        std::fprintf(stderr, "braid-perf: bad value '%s' for %s\n", v, flag);
        return false;
      }
      *dst = static_cast<int>(n);
      return true;
    };
    if (!std::strcmp(a, "-p")) {
      out->mode = RankMode::kProcesses;
    } else if (!std::strcmp(a, "-t")) {
      out->mode = RankMode::kThreads;
    } else if (!std::strcmp(a, "-g")) {
      out->mode = RankMode::kOneThread;
    } else if (!std::strcmp(a, "-N")) {
      if (!intValue(a, &out->nranks, 1)) return false;
    } else if (!std::strcmp(a, "-n")) {
      if (!intValue(a, &out->iters, 1)) return false;
    } else if (!std::strcmp(a, "-w")) {
      if (!intValue(a, &out->warmup, 0)) return false;
    } else if (!std::strcmp(a, "--runs")) {
      if (!intValue(a, &out->runs, 1)) return false;
    } else if (!std::strcmp(a, "--csv")) {
      out->csv = true;
    } else if (!std::strcmp(a, "--compare")) {
      const char* v = value(a);
      if (v == nullptr) return false;
      out->compareLib = v;
    } else {
      std::fprintf(stderr, "braid-perf: unknown option '%s'\n", a);
      printUsage(argv[0]);
      return false;
    }
  }
  if (out->op != "comm") {
    std::fprintf(stderr, "braid-perf: unknown operation '%s' (available: comm)\n", out->op.c_str());
    return false;
  }
  return true;
}

}  // namespace braidperf
