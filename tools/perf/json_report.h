// --json FILE: one run's results as a JSON document, for scripts (scripts/perf_page.py builds
// docs/performance.md's tables and plots from these files).
//
// The document ("format": "braid-perf-1"):
//   op, command (the words braid-perf was given), date (UTC, ISO 8601), setup (ranks and how they
//   run, as the banner says), nranks, gpus (each visible GPU's model), runs (per library),
//   libraries: [{label, path, loaded, version, unsupported}], the first the one braid-perf loaded;
//   environment: the NCCL_* and BRAID_* variables set, "NAME=value", sorted;
//   rows (collectives): [{bytes, count, type, redop, root, results: [per library, in order:
//     {time_us, algbw_gbs, busbw_gbs, wrong, refused, in_place: {the same but in_place}}]}],
//     time_us null where the library refused the row (refused: true) or has no figure for it,
//     wrong null where unchecked;
//   metrics (comm): [{name, values: [per library]}].
// Under --compare a result is the median over the runs of each library; wrong is their sum.
#pragma once

#include <string>
#include <vector>

#include "options.h"
#include "report.h"

namespace braidperf {

struct JsonLibrary {
  std::string label;   // "A", "B"
  std::string path;    // as given (A: the library this binary loaded)
  std::string loaded;  // the path the runs' banner names (empty: not known)
  int version = 0;     // NCCL_VERSION_CODE the runs reported (0: not known)
  std::string unsupported;
};

struct JsonRow {
  RowSpec spec;
  std::vector<RowResult> results;  // one per library; a time of 0 means the library has no figure
};

struct JsonMetric {
  std::string name;
  std::vector<double> values;  // one per library (NaN: not reported)
};

struct PerfReport {
  std::string op;
  std::vector<std::string> command;
  std::string setup;
  int nranks = 0;
  int runs = 1;
  std::vector<JsonLibrary> libraries;
  std::vector<JsonRow> rows;
  std::vector<JsonMetric> metrics;
};

// A run of one library (no --compare): its rows or metrics are added as they are measured.
PerfReport singleLibraryReport(const Options& opt, int nranks, const std::string& setup, const JsonLibrary& library);

// What the document says of the run's circumstances (the caller's, so that tests are repeatable).
struct RunContext {
  std::string date;                      // UTC, ISO 8601
  std::vector<std::string> gpus;         // gpuModels()
  std::vector<std::string> environment;  // libraryEnvironment()
};

std::string formatJson(const PerfReport& report, const RunContext& context);

// Writes the document with the current date, this machine's GPU models and this process's
// environment; false (and a message on stderr) when the file cannot be written.
bool writeJsonReport(const std::string& path, const PerfReport& report);

// The model of each GPU the NVIDIA driver lists (/proc/driver/nvidia/gpus/*/information), without
// initializing CUDA; empty where the driver is absent.
std::vector<std::string> gpuModels();

// The NCCL_* and BRAID_* variables of this process's environment, "NAME=value", sorted.
std::vector<std::string> libraryEnvironment();

// "# braid-perf OP: 4 ranks = ...; ..." -> nranks 4 and the setup text up to the first ';'. False
// for any other line.
bool parseSetupBanner(const std::string& line, int* nranks, std::string* setup);

// "# library PATH (NCCL version code N)" -> PATH and N. False for any other line.
bool parseLibraryBanner(const std::string& line, std::string* path, int* version);

}  // namespace braidperf
