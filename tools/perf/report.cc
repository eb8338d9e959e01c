#include "report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstring>

namespace braidperf {
namespace {

const char* redopName(const RowSpec& spec) { return collTraits(spec.coll).hasOp ? opName(spec.op) : "none"; }

// nccl-tests style: two decimals, fewer once the number gets wide.
std::string formatTime(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), us < 1e4 ? "%8.2f" : us < 1e6 ? "%8.1f" : "%8.0f", us);
  return buf;
}

std::string formatColumns(const Timing& t) {
  char buf[96];
  char wrong[24];
  if (t.wrong < 0) {
    std::snprintf(wrong, sizeof(wrong), "N/A");
  } else {
    std::snprintf(wrong, sizeof(wrong), "%lld", t.wrong);
  }
  if (t.us < 0) {
    std::snprintf(buf, sizeof(buf), "  %8s  %7s  %7s  %6s", "refused", "-", "-", wrong);
  } else {
    std::snprintf(buf, sizeof(buf), "  %s  %7.2f  %7.2f  %6s", formatTime(t.us).c_str(), t.algbw, t.busbw, wrong);
  }
  return buf;
}

Timing combineColumn(const RowSpec& spec, int nranks, int average, const std::vector<std::vector<double>>& records,
                     int at) {
  Timing t;
  double sum = 0, lo = records[0][at], hi = records[0][at];
  long long wrong = 0;
  bool checked = false;
  for (const std::vector<double>& r : records) {
    sum += r[at];
    lo = std::min(lo, r[at]);
    hi = std::max(hi, r[at]);
    if (r[at + 1] >= 0) {
      checked = true;
      wrong += static_cast<long long>(r[at + 1]);
    }
  }
  switch (average) {
    case 0:
      t.us = records[0][at];
      break;
    case 1:
      t.us = sum / static_cast<double>(records.size());
      break;
    case 2:
      t.us = lo;
      break;
    default:
      t.us = hi;
      break;
  }
  t.wrong = checked ? wrong : -1;
  if (lo < 0) t.us = kRefusedUs;  // refused by any rank (each reports it): no time
  setBandwidth(spec, nranks, &t);
  return t;
}

}  // namespace

void setBandwidth(const RowSpec& spec, int nranks, Timing* t) {
  // bytes / 1e9 / (us / 1e6)
  t->algbw = t->us > 0 ? static_cast<double>(spec.bytes) / 1e3 / t->us : 0;
  t->busbw = t->algbw * busBwFactor(spec.coll, nranks);
}

RowResult combineRecords(const RowSpec& spec, int nranks, int average,
                         const std::vector<std::vector<double>>& records) {
  RowResult row;
  row.spec = spec;
  if (records.empty()) return row;
  for (const std::vector<double>& r : records) {
    if (r.size() < kRecordSize) return row;
  }
  row.oop = combineColumn(spec, nranks, average, records, 0);
  row.ip = combineColumn(spec, nranks, average, records, 2);
  return row;
}

void printError(const char* format, ...) {
  char buf[2048] = "braid-perf: ";
  size_t used = std::strlen(buf);
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buf + used, sizeof(buf) - used - 1, format, args);
  va_end(args);
  used = std::min(sizeof(buf) - 2, used + (n > 0 ? static_cast<size_t>(n) : 0));
  buf[used++] = '\n';
  std::fflush(stderr);
  ssize_t w = write(STDERR_FILENO, buf, used);
  (void)w;
}

void printHeader(FILE* out) {
  std::fprintf(out, "#%67s%-34s  %s\n", "", "out-of-place", "in-place");
  std::fprintf(out, "#%11s  %12s  %8s  %6s  %5s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "#%11s  %12s  %8s  %6s  %5s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s\n", "(B)", "(elements)", "", "",
               "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

std::string formatRow(const RowResult& row) {
  const RowSpec& s = row.spec;
  const size_t elems = s.bytes / typeInfo(s.type).size;
  char head[128];
  std::snprintf(head, sizeof(head), " %11zu  %12zu  %8s  %6s  %5d", s.bytes, elems, typeInfo(s.type).name, redopName(s),
                s.root);
  return head + formatColumns(row.oop) + formatColumns(row.ip);
}

std::string formatCsvRow(const RowResult& row) {
  const RowSpec& s = row.spec;
  char buf[320];
  std::snprintf(buf, sizeof(buf), "csv,row,%s,%s,%s,%d,%zu,%zu,%.3f,%.4f,%.4f,%lld,%.3f,%.4f,%.4f,%lld",
                collTraits(s.coll).name, typeInfo(s.type).name, redopName(s), s.root, s.bytes, s.count, row.oop.us,
                row.oop.algbw, row.oop.busbw, row.oop.wrong, row.ip.us, row.ip.algbw, row.ip.busbw, row.ip.wrong);
  return buf;
}

bool parseCsvRow(const std::string& line, RowResult* row) {
  char coll[32], type[32], redop[32];
  RowResult r;
  int root = 0, used = 0;
  int n = std::sscanf(line.c_str(), "csv,row,%31[^,],%31[^,],%31[^,],%d,%zu,%zu,%lf,%lf,%lf,%lld,%lf,%lf,%lf,%lld%n",
                      coll, type, redop, &root, &r.spec.bytes, &r.spec.count, &r.oop.us, &r.oop.algbw, &r.oop.busbw,
                      &r.oop.wrong, &r.ip.us, &r.ip.algbw, &r.ip.busbw, &r.ip.wrong, &used);
  if (n != 14) return false;
  const char* rest = line.c_str() + used;
  if (std::strspn(rest, "\r\n") != std::strlen(rest)) return false;
  if (!parseColl(coll, &r.spec.coll)) return false;
  // Types are printed with their nccl-tests names, which parseType knows.
  if (!parseType(type, &r.spec.type)) return false;
  if (std::strcmp(redop, "none") == 0) {
    r.spec.op = ncclSum;
  } else if (!parseOp(redop, &r.spec.op)) {
    return false;
  }
  r.spec.root = root;
  *row = r;
  return true;
}

std::string formatUnsupportedCsv(const std::string& why) { return "csv,unsupported," + why; }

bool parseUnsupportedCsv(const std::string& line, std::string* why) {
  static const char kPrefix[] = "csv,unsupported,";
  if (line.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0) return false;
  std::string rest = line.substr(sizeof(kPrefix) - 1);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.pop_back();
  *why = rest;
  return true;
}

void Summary::add(const RowResult& row) {
  rows_++;
  if (row.oop.us < 0 || row.ip.us < 0) refused_++;
  for (const Timing* t : {&row.oop, &row.ip}) {
    if (t->us < 0) continue;  // refused: no bandwidth to average
    busbwSum_ += t->busbw;
    busbwCount_++;
  }
  for (const Timing* t : {&row.oop, &row.ip}) {
    if (t->wrong >= 0) {
      checked_ = true;
      wrong_ += t->wrong;
    }
  }
}

void Summary::print(FILE* out) const {
  std::fprintf(out, "# Errors             : %s\n",
               rows_ == 0    ? "no size completed"
               : !checked_   ? "not checked (-c 0)"
               : wrong_ == 0 ? "0 OK"
                             : (std::to_string(wrong_) + " wrong elements").c_str());
  if (refused_ > 0) {
    std::fprintf(out, "# Refused            : %d of %d sizes (the library refused the operation as asked; see above)\n",
                 refused_, rows_);
  }
  std::fprintf(out, "# Avg bus bandwidth    : %g\n", busbwCount_ > 0 ? busbwSum_ / busbwCount_ : 0.0);
  std::fprintf(out, "#\n");
}

}  // namespace braidperf
