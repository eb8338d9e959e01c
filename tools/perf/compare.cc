#include "compare.h"

#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

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
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs this binary with `lib` preloaded and --csv; appends each metric's median to `values`.
bool runWith(const std::string& lib, int argc, char** argv, std::map<std::string, std::vector<double>>* values,
             std::vector<std::string>* order) {
  std::string cmd = "LD_PRELOAD=" + quote(lib) + " LD_LIBRARY_PATH=" + quote(dirOf(lib)) + " /proc/" +
                    std::to_string(getpid()) + "/exe";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--compare") || !std::strcmp(argv[i], "--runs")) {
      i++;
      continue;
    }
    cmd += " " + quote(argv[i]);
  }
  cmd += " --csv";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return false;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe)) {
    char name[128];
    double value;
    if (std::sscanf(line, "csv,%127[^,],%lf", name, &value) == 2) {
      if (!values->count(name) && order != nullptr) order->push_back(name);
      (*values)[name].push_back(value);
    } else if (line[0] == '#') {
      std::fputs(line, stdout);  // the child's banner names the library it really loaded
    } else if (std::strncmp(line, "  ", 2) != 0) {
      std::fputs(line, stdout);  // errors
    }
  }
  return pclose(pipe) == 0;
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

int runCompare(int argc, char** argv, const Options& opt) {
  std::string self = loadedLibraryPath();
  std::map<std::string, std::vector<double>> a, b;
  std::vector<std::string> order;
  // Alternate the libraries so that drift of the machine hits both alike.
  for (int run = 0; run < opt.runs; run++) {
    if (!runWith(self, argc, argv, &a, &order) || !runWith(opt.compareLib, argc, argv, &b, nullptr)) {
      std::fprintf(stderr, "braid-perf: a compared run failed\n");
      return 1;
    }
  }
  std::printf("# compare: A = %s\n#          B = %s\n# medians over %d runs of each\n", self.c_str(),
              opt.compareLib.c_str(), opt.runs);
  std::printf("# %-16s %12s %12s %10s\n", "metric", "A", "B", "A/B");
  for (const std::string& name : order) {
    if (!b.count(name)) continue;
    double ma = median(a[name]), mb = median(b[name]);
    std::printf("  %-16s %12.2f %12.2f %10.3f\n", name.c_str(), ma, mb, mb != 0 ? ma / mb : 0.0);
  }
  return 0;
}

}  // namespace braidperf
