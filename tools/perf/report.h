// Output of the collective benchmarks: nccl-tests columns, the csv rows that --compare reads, and
// the combination of the ranks' measurements into one row.
//
// Every worker sends one record per row: {out-of-place us, wrong, in-place us, wrong}, where wrong
// is -1 when not checked. The row's time is the max (or mean, min, rank 0: -a) over workers, its
// wrong count the sum.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "coll.h"

namespace braidperf {

constexpr int kRecordSize = 4;

// A worker's time for a row the library refused to run as asked (a one-sided operation captured in a
// CUDA graph where the library allows it only eagerly). Every rank reports it for the same rows.
constexpr double kRefusedUs = -1;

struct Timing {
  double us = 0;         // kRefusedUs (negative): refused
  double algbw = 0;      // GB/s: size / time
  double busbw = 0;      // GB/s: algbw * busBwFactor
  long long wrong = -1;  // -1: not checked
};

struct RowResult {
  RowSpec spec;
  Timing oop;
  Timing ip;
};

// Fills algbw/busbw of t from its time.
void setBandwidth(const RowSpec& spec, int nranks, Timing* t);
// Combines the workers' records (see above). average: 0 rank 0, 1 mean, 2 min, 3 max.
RowResult combineRecords(const RowSpec& spec, int nranks, int average, const std::vector<std::vector<double>>& records);

// Prints "braid-perf: <message>\n" to stderr in one write, so that lines of several ranks'
// processes do not interleave.
void printError(const char* format, ...) __attribute__((format(printf, 1, 2)));

void printHeader(FILE* out);
std::string formatRow(const RowResult& row);
// "csv,row,OP,TYPE,REDOP,ROOT,SIZE,COUNT,OOP_US,OOP_ALGBW,OOP_BUSBW,OOP_WRONG,IP_US,IP_ALGBW,IP_BUSBW,IP_WRONG"
std::string formatCsvRow(const RowResult& row);
// Parses a line made by formatCsvRow (trailing newline allowed). False for any other line.
bool parseCsvRow(const std::string& line, RowResult* row);

// The line a run prints, and --compare reads, when the library lacks the operation altogether:
// "csv,unsupported,WHY". parseUnsupportedCsv gives WHY back; false for any other line.
std::string formatUnsupportedCsv(const std::string& why);
bool parseUnsupportedCsv(const std::string& line, std::string* why);

// The "# Avg bus bandwidth" line (mean busbw of every out-of-place and in-place column, as
// nccl-tests; refused columns left out), the total of wrong elements and the refused rows.
class Summary {
 public:
  void add(const RowResult& row);
  void print(FILE* out) const;
  long long wrong() const { return wrong_; }
  int refused() const { return refused_; }

 private:
  double busbwSum_ = 0;
  int busbwCount_ = 0;
  long long wrong_ = 0;
  bool checked_ = false;
  int rows_ = 0;
  int refused_ = 0;  // rows with a refused column
};

}  // namespace braidperf
