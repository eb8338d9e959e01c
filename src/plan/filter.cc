// NCCL_ALGO / NCCL_PROTO parsing (NCCL 2.24+ syntax; see plan.h for the grammar).
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>

#include "plan/plan.h"
#include "util/check.h"
#include "util/log.h"
#include "util/text.h"

namespace braid::plan {

namespace {

constexpr const char* kCollNames[kNumColls] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
constexpr const char* kAlgoNames[kNumAlgos] = {"Tree", "Ring",     "CollNetDirect", "CollNetChain",
                                               "NVLS", "NVLSTree", "PAT",           "Direct"};
constexpr const char* kProtoNames[kNumProtos] = {"LL", "LL128", "Simple"};

// Index of `name` in `names` (case-insensitive), or -1.
template <int N>
int findName(std::string_view name, const char* const (&names)[N]) {
  for (int i = 0; i < N; ++i) {
    if (equalsIgnoreCase(name, names[i])) return i;
  }
  return -1;
}

template <int N>
std::string joinNames(const char* const (&names)[N]) {
  std::string joined;
  for (int i = 0; i < N; ++i) {
    if (i > 0) joined += ", ";
    joined += names[i];
  }
  return joined;
}

// Parses one list ("[^]name[,name...]") into `allowed` (one row of N elements).
template <int N>
ncclResult_t parseList(const char* var, const char* text, std::string_view list, const char* const (&names)[N],
                       const char* kind, bool (&allowed)[N]) {
  list = trimWhitespace(list);
  bool invert = false;
  if (!list.empty() && list.front() == '^') {
    invert = true;
    list = trimWhitespace(list.substr(1));
  }
  if (list.empty()) {
    WARN("%s=\"%s\": empty list of %ss", var, text, kind);
    return ncclInvalidArgument;
  }
  bool row[N];
  for (bool& r : row) r = invert;
  while (true) {
    size_t comma = list.find(',');
    std::string_view token = trimWhitespace(list.substr(0, comma));
    int index = findName(token, names);
    if (index < 0) {
      WARN("%s=\"%s\": unknown %s '%.*s' (expected %s)", var, text, kind, static_cast<int>(token.size()), token.data(),
           joinNames(names).c_str());
      return ncclInvalidArgument;
    }
    row[index] = !invert;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  for (int i = 0; i < N; ++i) allowed[i] = row[i];
  return ncclSuccess;
}

// Parses a whole variable into rows[coll][N]; rows start all allowed. named[coll] says whether an
// entry (one without "func:" names them all) set the collective's row.
template <int N>
ncclResult_t parseVariable(const char* var, const char* text, const char* const (&names)[N], const char* kind,
                           bool (&rows)[kNumColls][N], bool (&named)[kNumColls]) {
  for (auto& row : rows) {
    for (bool& r : row) r = true;
  }
  for (bool& n : named) n = false;
  if (text == nullptr) return ncclSuccess;
  std::string_view rest(text);
  bool first = true;
  while (!rest.empty()) {
    size_t semi = rest.find(';');
    std::string_view entry = trimWhitespace(rest.substr(0, semi));
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      if (!first) {
        WARN("%s=\"%s\": entry '%.*s' needs a 'function:' prefix (only the first entry may omit it)", var, text,
             static_cast<int>(entry.size()), entry.data());
        return ncclInvalidArgument;
      }
      bool row[N];
      NCCLCHECK(parseList(var, text, entry, names, kind, row));
      for (auto& r : rows) std::copy(row, row + N, r);
      for (bool& n : named) n = true;
    } else {
      std::string_view func = trimWhitespace(entry.substr(0, colon));
      int coll = findName(func, kCollNames);
      if (coll < 0) {
        WARN("%s=\"%s\": unknown function '%.*s' (expected %s)", var, text, static_cast<int>(func.size()), func.data(),
             joinNames(kCollNames).c_str());
        return ncclInvalidArgument;
      }
      NCCLCHECK(parseList(var, text, entry.substr(colon + 1), names, kind, rows[coll]));
      named[coll] = true;
    }
    first = false;
  }
  return ncclSuccess;
}

// Whether `allowed` (a collective's NCCL_ALGO row) holds an algorithm Braid has for it: Ring,
// Direct, or for AllReduce Tree.
bool hasBraidAlgorithm(int coll, const bool (&allowed)[kNumAlgos]) {
  return allowed[kAlgoRing] || allowed[kAlgoDirect] ||
         (coll == static_cast<int>(CollId::kAllReduce) && allowed[kAlgoTree]);
}

// One WARN at parse time naming the NCCL_ALGO string and every collective it leaves without an
// algorithm Braid has: each of them will be refused when called (decide() WARNs again then).
void warnCollectivesWithoutAlgorithm(const char* text, const Filter& filter) {
  std::string left;
  for (int c = 0; c < kNumColls; ++c) {
    if (hasBraidAlgorithm(c, filter.algo[c])) continue;
    if (!left.empty()) left += ", ";
    left += kCollNames[c];
  }
  if (left.empty()) return;
  WARN(
      "NCCL_ALGO=\"%s\" leaves %s without any algorithm Braid has (Ring, Direct; Tree for AllReduce): those "
      "collectives will fail with ncclInvalidUsage. As in NCCL 2.31 and later, a collective that a string of "
      "\"function:\" entries does not name gets no algorithm; name each collective you use, or begin with a list for "
      "all of them (\"ring;allreduce:tree\")",
      text, left.c_str());
}

}  // namespace

ncclResult_t parseFilter(const char* algoEnv, const char* protoEnv, Filter* out) {
  Filter filter;
  NCCLCHECK(parseVariable("NCCL_ALGO", algoEnv, kAlgoNames, "algorithm", filter.algo, filter.algoNamed));
  // NCCL 2.31's rule: once NCCL_ALGO names anything, a collective it does not name has no algorithm.
  if (std::any_of(std::begin(filter.algoNamed), std::end(filter.algoNamed), [](bool n) { return n; })) {
    for (int c = 0; c < kNumColls; ++c) {
      if (!filter.algoNamed[c]) std::fill(std::begin(filter.algo[c]), std::end(filter.algo[c]), false);
    }
  }
  bool protoNamed[kNumColls];
  NCCLCHECK(parseVariable("NCCL_PROTO", protoEnv, kProtoNames, "protocol", filter.proto, protoNamed));
  if (algoEnv != nullptr) warnCollectivesWithoutAlgorithm(algoEnv, filter);
  *out = filter;
  return ncclSuccess;
}

bool onlyTreeForAllReduce(const Filter& filter) {
  const bool* allowed = filter.algo[static_cast<int>(CollId::kAllReduce)];
  return allowed[kAlgoTree] && !allowed[kAlgoRing] && !allowed[kAlgoDirect];
}

const char* collName(CollId coll) {
  int i = static_cast<int>(coll);
  return i >= 0 && i < kNumColls ? kCollNames[i] : "unknown";
}

const char* algoName(AlgoId algo) { return algo >= 0 && algo < kNumAlgos ? kAlgoNames[algo] : "unknown"; }

const char* protoName(ProtoId proto) { return proto >= 0 && proto < kNumProtos ? kProtoNames[proto] : "unknown"; }

}  // namespace braid::plan
