// Command line of braid-perf. Flags follow nccl-tests where they overlap (-b -e -f -i -d -o -r -w -n
// -c -t -g -a); -p (one process per GPU), -N, --compare, --runs, --csv, --json and --timeout are braid-perf's.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

#include "coll.h"

namespace braidperf {

// How the ranks are spread: procs processes x threads threads x gpus GPUs per thread. Rank
// ((proc * threads) + thread) * gpus + g drives CUDA device number rank (one node).
struct Layout {
  int procs = 1;
  int threads = 1;
  int gpus = 1;
  int hosts = 0;  // > 0: processes split into this many emulated hosts (--hosts)
  // > 0: fewer GPUs than ranks, shared by the emulated hosts: rank r runs on GPU r % sharedGpus.
  int sharedGpus = 0;
  int nranks() const { return procs * threads * gpus; }
  int deviceOf(int rank) const { return sharedGpus > 0 ? rank % sharedGpus : rank; }
  int workers() const { return procs * threads; }
};

// -t / -g given without a number: "as many as there are GPUs".
constexpr int kAllGpus = -1;

struct Options {
  std::string op;  // first positional argument: "comm", a collective or "putsignal"
  bool isComm = false;
  Coll coll = Coll::kAllReduce;

  // Rank layout as given; resolveLayout() turns it into `layout`.
  bool procFlag = false;  // -p
  int threadsArg = 0;     // -t [T]: 0 not given, kAllGpus without a number
  int gpusArg = 0;        // -g [G]
  int nranks = 0;         // -N: 0 means every visible GPU
  Layout layout;

  size_t minBytes = 8;                  // -b
  size_t maxBytes = size_t{128} << 20;  // -e
  int stepFactor = 2;                   // -f: multiplicative step
  size_t stepBytes = 0;                 // -i: additive step (used when set and -f is not)
  bool factorGiven = false;

  std::vector<ncclDataType_t> types{ncclFloat32};  // -d
  std::vector<ncclRedOp_t> ops{ncclSum};           // -o
  int root = 0;                                    // -r
  int iters = -1;                                  // -n (default 20; comm: 10 cycles)
  int warmup = -1;                                 // -w (default 5; comm: 1 cycle)
  int graphLaunches = 0;                           // -G: capture the -n iterations in a CUDA graph, launch it G times
  bool check = true;                               // -c
  int registration = 0;  // -R: 1 ncclMemAlloc + ncclCommRegister the buffers, 2 ncclMemAlloc + symmetric windows
  int average = 3;       // -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks

  std::vector<std::string> command;  // the words braid-perf was given, argv[0] as "braid-perf"
  bool csv = false;                  // machine-readable rows for --compare
  std::string jsonPath;              // --json FILE: the results as JSON (json_report.h)
  std::string compareLib;            // --compare PATH: also run against this libnccl.so.2 and print ratios
  int runs = 3;                      // --runs: fresh processes per library in --compare (median taken)
  int timeoutSec = 0;                // --timeout: give up when no rank reports for this long (0: never)
  int hosts = 0;                     // --hosts: emulate this many hosts (NCCL_HOSTID per process; 0: off)
};

// Parses argv; prints usage or the reason and returns false on bad input.
bool parseOptions(int argc, char** argv, Options* out);
void printUsage(const char* argv0);

// Parses "123", "64K", "16M", "1G" (powers of 1024; suffix case-insensitive). False if malformed or over 1 TiB.
bool parseSize(const std::string& text, size_t* out);
// Parses a comma list of types ("float,half") or "all".
bool parseTypeList(const std::string& text, std::vector<ncclDataType_t>* out);
// Parses a comma list of ops ("sum,max") or "all".
bool parseOpList(const std::string& text, std::vector<ncclRedOp_t>* out);

// Fills opt->layout from -p/-t/-g/-N given `visibleGpus`; on failure returns false with the reason.
bool resolveLayout(Options* opt, int visibleGpus, std::string* why);

// The sizes in bytes of the sweep: minBytes, then times stepFactor (or plus stepBytes), up to maxBytes.
std::vector<size_t> sweepSizes(const Options& opt);
// Every row of a collective sweep, for nranks ranks: for each type, for each op, for each size.
std::vector<RowSpec> planRows(const Options& opt, int nranks);

}  // namespace braidperf
