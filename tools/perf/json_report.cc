#include "json_report.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

namespace braidperf {
namespace {

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        q += "\\\"";
        break;
      case '\\':
        q += "\\\\";
        break;
      case '\n':
        q += "\\n";
        break;
      case '\t':
        q += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          q += buf;
        } else {
          q += static_cast<char>(c);
        }
    }
  }
  return q + "\"";
}

std::string number(double v, const char* format) {
  if (!std::isfinite(v)) return "null";
  char buf[48];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string stringList(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + quoted(items[i]);
  return s + "]";
}

// The fields of one column. A time of 0 (no figure) or below (refused) has no bandwidth.
std::string timingFields(const Timing& t) {
  const bool timed = t.us > 0;
  const std::string none = "null";
  return "\"time_us\": " + (timed ? number(t.us, "%.3f") : none) +
         ", \"algbw_gbs\": " + (timed ? number(t.algbw, "%.4f") : none) +
         ", \"busbw_gbs\": " + (timed ? number(t.busbw, "%.4f") : none) +
         ", \"wrong\": " + (t.wrong >= 0 ? std::to_string(t.wrong) : none) +
         ", \"refused\": " + (t.us < 0 ? "true" : "false");
}

std::string resultObject(const RowResult& r) {
  return "{" + timingFields(r.oop) + ", \"in_place\": {" + timingFields(r.ip) + "}}";
}

std::string rowObject(const JsonRow& row) {
  const RowSpec& s = row.spec;
  std::string out = "    {\"bytes\": " + std::to_string(s.bytes) + ", \"count\": " + std::to_string(s.count) +
                    ", \"type\": " + quoted(typeInfo(s.type).name) +
                    ", \"redop\": " + quoted(collTraits(s.coll).hasOp ? opName(s.op) : "none") +
                    ", \"root\": " + std::to_string(s.root) + ", \"results\": [";
  for (size_t i = 0; i < row.results.size(); ++i) out += (i ? ", " : "") + resultObject(row.results[i]);
  return out + "]}";
}

std::string libraryObject(const JsonLibrary& lib) {
  return "    {\"label\": " + quoted(lib.label) + ", \"path\": " + quoted(lib.path) +
         ", \"loaded\": " + quoted(lib.loaded) + ", \"version\": " + std::to_string(lib.version) +
         ", \"unsupported\": " + quoted(lib.unsupported) + "}";
}

std::string metricObject(const JsonMetric& m) {
  std::string out = "    {\"name\": " + quoted(m.name) + ", \"values\": [";
  for (size_t i = 0; i < m.values.size(); ++i) out += (i ? ", " : "") + number(m.values[i], "%.4f");
  return out + "]}";
}

template <typename T, typename F>
std::string objectList(const std::vector<T>& items, F format) {
  if (items.empty()) return "[]";
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i) s += format(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  return s + "  ]";
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

PerfReport singleLibraryReport(const Options& opt, int nranks, const std::string& setup, const JsonLibrary& library) {
  PerfReport report;
  report.op = opt.op;
  report.command = opt.command;
  report.setup = setup;
  report.nranks = nranks;
  report.libraries.push_back(library);
  return report;
}

std::string formatJson(const PerfReport& report, const RunContext& context) {
  std::string s = "{\n";
  s += "  \"format\": \"braid-perf-1\",\n";
  s += "  \"op\": " + quoted(report.op) + ",\n";
  s += "  \"command\": " + stringList(report.command) + ",\n";
  s += "  \"date\": " + quoted(context.date) + ",\n";
  s += "  \"setup\": " + quoted(report.setup) + ",\n";
  s += "  \"nranks\": " + std::to_string(report.nranks) + ",\n";
  s += "  \"gpus\": " + stringList(context.gpus) + ",\n";
  s += "  \"environment\": " + stringList(context.environment) + ",\n";
  s += "  \"runs\": " + std::to_string(report.runs) + ",\n";
  s += "  \"libraries\": " + objectList(report.libraries, libraryObject) + ",\n";
  s += "  \"rows\": " + objectList(report.rows, rowObject) + ",\n";
  s += "  \"metrics\": " + objectList(report.metrics, metricObject) + "\n";
  return s + "}\n";
}

bool writeJsonReport(const std::string& path, const PerfReport& report) {
  std::ofstream out(path, std::ios::trunc);
  out << formatJson(report, RunContext{utcNow(), gpuModels(), libraryEnvironment()});
  out.close();
  if (!out) {
    std::fprintf(stderr, "braid-perf: could not write --json file %s\n", path.c_str());
    return false;
  }
  return true;
}

std::vector<std::string> gpuModels() {
  const std::string root = "/proc/driver/nvidia/gpus";
  std::vector<std::string> buses;
  if (DIR* dir = opendir(root.c_str())) {
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') buses.emplace_back(entry->d_name);
    }
    closedir(dir);
  }
  std::sort(buses.begin(), buses.end());  // PCI order, as CUDA's default device order
  std::vector<std::string> models;
  for (const std::string& bus : buses) {
    std::ifstream info(root + "/" + bus + "/information");
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("Model:", 0) != 0) continue;
      const size_t start = line.find_first_not_of(" \t", 6);
      models.push_back(start == std::string::npos ? "" : line.substr(start));
      break;
    }
  }
  return models;
}

std::vector<std::string> libraryEnvironment() {
  std::vector<std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("NCCL_", 0) == 0 || var.rfind("BRAID_", 0) == 0) vars.push_back(var);
  }
  std::sort(vars.begin(), vars.end());
  return vars;
}

bool parseSetupBanner(const std::string& line, int* nranks, std::string* setup) {
  static const char kPrefix[] = "# braid-perf ";
  if (line.rfind(kPrefix, 0) != 0) return false;
  const size_t colon = line.find(": ", sizeof(kPrefix) - 1);
  if (colon == std::string::npos) return false;
  std::string rest = line.substr(colon + 2);
  int n = 0;
  if (std::sscanf(rest.c_str(), "%d ranks", &n) != 1 || n < 1) return false;
  rest = rest.substr(0, rest.find(';'));
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.pop_back();
  *nranks = n;
  *setup = rest;
  return true;
}

bool parseLibraryBanner(const std::string& line, std::string* path, int* version) {
  static const char kPrefix[] = "# library ";
  static const char kVersion[] = " (NCCL version code ";
  if (line.rfind(kPrefix, 0) != 0) return false;
  const size_t at = line.rfind(kVersion);
  if (at == std::string::npos || at < sizeof(kPrefix) - 1) return false;
  int v = 0;
  if (std::sscanf(line.c_str() + at + sizeof(kVersion) - 1, "%d)", &v) != 1) return false;
  *path = line.substr(sizeof(kPrefix) - 1, at - (sizeof(kPrefix) - 1));
  *version = v;
  return true;
}

}  // namespace braidperf
