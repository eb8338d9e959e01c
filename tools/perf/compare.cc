#include "compare.h"

#include <dlfcn.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "json_report.h"
#include "report.h"

namespace braidperf {
namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string rowKey(const RowSpec& s) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%zu %s %s %d", s.bytes, typeInfo(s.type).name,
                collTraits(s.coll).hasOp ? opName(s.op) : "none", s.root);
  return buf;
}

// Everything one library's runs reported.
struct Side {
  std::string lib;
  std::map<std::string, std::vector<double>> metrics;  // comm: name -> per-run medians
  std::map<std::string, std::vector<RowResult>> rows;  // collectives: key -> per-run rows
  std::string loaded;                                  // what the children's banner says they loaded
  int version = 0;                                     // the NCCL version code they reported
  std::string unsupported;                             // why the library cannot run the operation at all
  long long wrong = 0;
  int failures = 0;
};

std::string realPath(const std::string& p) {
  char* r = realpath(p.c_str(), nullptr);
  std::string out = r != nullptr ? r : p;
  std::free(r);
  return out;
}

struct Order {
  std::vector<std::string> metrics, rows;
  std::map<std::string, RowSpec> specs;
  int nranks = 0;     // from the runs' banner
  std::string setup;  // the same
};

// Runs this binary once with `side.lib` preloaded and --csv; adds what it reported to `side`.
// A failed run is reported with its exit status and stderr, and what it reported before failing counts.
void runOnce(Side* side, int run, int argc, char** argv, Order* order) {
  char errPath[] = "/tmp/braid-perf-stderr-XXXXXX";
  int errFd = mkstemp(errPath);
  if (errFd >= 0) close(errFd);
  std::string cmd = "LD_PRELOAD=" + quote(side->lib) + " LD_LIBRARY_PATH=" + quote(dirOf(side->lib)) +
                    "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} /proc/" + std::to_string(getpid()) + "/exe";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--compare") || !std::strcmp(argv[i], "--runs") || !std::strcmp(argv[i], "--json")) {
      i++;
      continue;
    }
    cmd += " " + quote(argv[i]);
  }
  cmd += " --csv";
  if (errFd >= 0) cmd += std::string(" 2>") + quote(errPath);
  std::fflush(stdout);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    std::fprintf(stderr, "braid-perf: could not start a run with %s\n", side->lib.c_str());
    side->failures++;
    return;
  }
  char line[1024];
  while (std::fgets(line, sizeof(line), pipe)) {
    char name[128];
    double value = 0;
    RowResult row;
    std::string why;
    if (parseUnsupportedCsv(line, &why)) {
      side->unsupported = why;
    } else if (parseCsvRow(line, &row)) {
      std::string key = rowKey(row.spec);
      if (!order->specs.count(key)) order->rows.push_back(key);
      order->specs[key] = row.spec;
      side->rows[key].push_back(row);
      side->wrong += std::max(0LL, row.oop.wrong) + std::max(0LL, row.ip.wrong);
    } else if (std::sscanf(line, "csv,%127[^,],%lf", name, &value) == 2) {
      if (std::find(order->metrics.begin(), order->metrics.end(), name) == order->metrics.end()) {
        order->metrics.push_back(name);
      }
      side->metrics[name].push_back(value);
    } else if (line[0] == '#') {
      if (run == 0) std::fputs(line, stdout);  // the banner names the library really loaded
      (void)parseLibraryBanner(line, &side->loaded, &side->version);
      (void)parseSetupBanner(line, &order->nranks, &order->setup);
    } else if (std::strncmp(line, "  ", 2) != 0) {
      std::fputs(line, stdout);  // the library's own log lines
    }
  }
  int status = pclose(pipe);
  std::string err;
  if (errFd >= 0) {
    std::ifstream in(errPath);
    std::stringstream ss;
    ss << in.rdbuf();
    err = ss.str();
    unlink(errPath);
  }
  if (status != 0) {
    side->failures++;
    std::fprintf(stderr, "braid-perf: run %d with %s failed (%s %d); its stderr:\n%s", run + 1, side->lib.c_str(),
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), err.empty() ? "(empty)\n" : err.c_str());
  } else if (!err.empty()) {
    std::fputs(err.c_str(), stderr);
  }
}

void printMetrics(const Side& a, const Side& b, const Order& order) {
  std::printf("# %-16s %12s %12s %10s\n", "metric", "A", "B", "A/B");
  for (const std::string& name : order.metrics) {
    if (!a.metrics.count(name) || !b.metrics.count(name)) continue;
    double ma = median(a.metrics.at(name)), mb = median(b.metrics.at(name));
    std::printf("  %-16s %12.2f %12.2f %10.3f\n", name.c_str(), ma, mb, mb != 0 ? ma / mb : 0.0);
  }
}

// One column (out of place, or in place) of a side's runs of a row: the median time, algbw and
// busbw of the runs that timed it (kRefusedUs where every run refused it, 0 where none ran it) and
// the wrong elements of them all.
Timing medianColumn(const std::vector<RowResult>& runs, bool inPlace) {
  std::vector<double> times, algbws, busbws;
  Timing t;
  bool refused = false;
  for (const RowResult& r : runs) {
    const Timing& c = inPlace ? r.ip : r.oop;
    if (c.wrong >= 0) t.wrong = std::max(0LL, t.wrong) + c.wrong;
    if (c.us < 0) refused = true;
    if (c.us <= 0) continue;
    times.push_back(c.us);
    algbws.push_back(c.algbw);
    busbws.push_back(c.busbw);
  }
  t.us = !times.empty() ? median(times) : refused ? kRefusedUs : 0;
  t.algbw = median(algbws);
  t.busbw = median(busbws);
  return t;
}

// Median out-of-place time and busbw of one side's runs of a row (0 when it has none, kRefusedUs
// when the library refused it in every run); adds its wrong elements to *wrong.
void medians(const Side& s, const std::string& key, double* us, double* busbw, long long* wrong, bool* checked) {
  *us = *busbw = 0;
  auto it = s.rows.find(key);
  if (it == s.rows.end()) return;
  const Timing oop = medianColumn(it->second, false);
  for (const Timing& t : {oop, medianColumn(it->second, true)}) {
    if (t.wrong < 0) continue;
    *checked = true;
    *wrong += t.wrong;
  }
  *us = oop.us;
  *busbw = oop.busbw;
}

// A time cell: the median, "refused", or "n/a" where the library has not the operation at all.
std::string timeCell(double us, const Side& s) {
  char buf[32];
  if (us == 0 && !s.unsupported.empty()) return "n/a";
  if (us < 0) return "refused";
  std::snprintf(buf, sizeof(buf), "%.2f", us);
  return buf;
}

void printRows(const std::string& op, const Side& a, const Side& b, const Order& order) {
  std::printf("# %s: time A/B < 1 means A is faster; busbw A/B > 1 means A moves more\n", op.c_str());
  std::printf("#%11s  %8s  %6s  %5s  %11s  %11s  %7s  %9s  %9s  %7s  %s\n", "size", "type", "redop", "root",
              "time A(us)", "time B(us)", "A/B", "busbw A", "busbw B", "A/B", "check");
  double logSum = 0, worst = 0;
  int counted = 0;
  std::string worstKey;
  for (const std::string& key : order.rows) {
    const RowSpec& spec = order.specs.at(key);
    long long wa = 0, wb = 0;
    bool checked = false;
    double ta = 0, tb = 0, bwa = 0, bwb = 0;
    medians(a, key, &ta, &bwa, &wa, &checked);
    medians(b, key, &tb, &bwb, &wb, &checked);
    std::string check = !checked ? "-" : wa + wb == 0 ? "ok" : "";
    if (wa > 0) check += "A:" + std::to_string(wa) + " wrong ";
    if (wb > 0) check += "B:" + std::to_string(wb) + " wrong";
    for (const Side* s : {&a, &b}) {
      if (!s->unsupported.empty()) check += std::string(s == &a ? " A: " : " B: ") + s->unsupported;
    }
    double ratio = ta > 0 && tb > 0 ? ta / tb : 0;
    double bwRatio = bwa > 0 && bwb > 0 ? bwa / bwb : 0;
    std::printf(" %11zu  %8s  %6s  %5d  %11s  %11s  %7.3f  %9.2f  %9.2f  %7.3f  %s\n", spec.bytes,
                typeInfo(spec.type).name, collTraits(spec.coll).hasOp ? opName(spec.op) : "none", spec.root,
                timeCell(ta, a).c_str(), timeCell(tb, b).c_str(), ratio, bwa, bwb, bwRatio, check.c_str());
    if (ratio > 0) {
      logSum += std::log(ratio);
      counted++;
      if (ratio > worst) {
        worst = ratio;
        worstKey = key;
      }
    }
  }
  if (counted > 0) {
    std::printf("# summary: time A/B geometric mean %.3f over %d sizes; worst %.3f at %s\n", std::exp(logSum / counted),
                counted, worst, worstKey.c_str());
  } else {
    std::printf("# summary: no size was measured by both libraries\n");
  }
}

PerfReport compareReport(const Options& opt, const Side& a, const Side& b, const Order& order) {
  PerfReport report;
  report.op = opt.op;
  report.command = opt.command;
  report.setup = order.setup;
  report.nranks = order.nranks;
  report.runs = opt.runs;
  for (const Side* s : {&a, &b}) {
    report.libraries.push_back(JsonLibrary{s == &a ? "A" : "B", s->lib, s->loaded, s->version, s->unsupported});
  }
  for (const std::string& name : order.metrics) {
    JsonMetric m{name, {}};
    for (const Side* s : {&a, &b}) {
      auto it = s->metrics.find(name);
      m.values.push_back(it != s->metrics.end() ? median(it->second) : std::nan(""));
    }
    report.metrics.push_back(m);
  }
  for (const std::string& key : order.rows) {
    JsonRow row{order.specs.at(key), {}};
    for (const Side* s : {&a, &b}) {
      RowResult r;
      r.spec = row.spec;
      auto it = s->rows.find(key);
      if (it != s->rows.end()) {
        r.oop = medianColumn(it->second, false);
        r.ip = medianColumn(it->second, true);
      }
      row.results.push_back(r);
    }
    report.rows.push_back(row);
  }
  return report;
}

}  // namespace

const char* loadedLibraryPath() {
  static std::string path;
  Dl_info info;
  if (path.empty() && dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) && info.dli_fname) {
    path = info.dli_fname;
  }
  return path.c_str();
}

JsonLibrary loadedLibrary() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) version = 0;
  return JsonLibrary{"A", loadedLibraryPath(), loadedLibraryPath(), version, ""};
}

int runCompare(int argc, char** argv, const Options& opt) {
  Side a, b;
  a.lib = loadedLibraryPath();
  b.lib = opt.compareLib;
  // The loader ignores an LD_PRELOAD it cannot open, which would compare the library with itself.
  if (access(b.lib.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "braid-perf: cannot read --compare library %s\n", b.lib.c_str());
    return 2;
  }
  Order order;
  // Alternate the libraries so that drift of the machine hits both alike.
  for (int run = 0; run < opt.runs; run++) {
    runOnce(&a, run, argc, argv, &order);
    runOnce(&b, run, argc, argv, &order);
  }
  std::printf("# compare: A = %s\n#          B = %s\n# medians over %d runs of each%s\n", a.lib.c_str(), b.lib.c_str(),
              opt.runs, opt.isComm ? "" : " (out-of-place time and busbw)");
  if (opt.isComm) {
    printMetrics(a, b, order);
  } else {
    printRows(opt.op, a, b, order);
  }
  for (const Side* s : {&a, &b}) {
    if (!s->unsupported.empty()) std::printf("# %s: %s\n", s == &a ? "A" : "B", s->unsupported.c_str());
    if (!s->loaded.empty() && realPath(s->loaded) != realPath(s->lib)) {
      std::printf("# WARNING: runs meant for %s loaded %s\n", s->lib.c_str(), s->loaded.c_str());
    }
  }
  const bool written = opt.jsonPath.empty() || writeJsonReport(opt.jsonPath, compareReport(opt, a, b, order));
  if (a.failures + b.failures > 0) {
    std::fprintf(stderr, "braid-perf: %d run(s) with A and %d with B failed (their stderr is above)\n", a.failures,
                 b.failures);
  }
  return written && a.failures + b.failures == 0 && a.wrong + b.wrong == 0 ? 0 : 1;
}

}  // namespace braidperf
