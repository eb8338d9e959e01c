// ncclCollConfig_t::algSelection parsing (selection.h has the grammar).
#include "plan/selection.h"

#include <string_view>

#include "util/text.h"

namespace braid::plan {
namespace {

constexpr uint8_t collBit(CollId coll) { return static_cast<uint8_t>(1u << static_cast<unsigned>(coll)); }
constexpr uint8_t kAr = collBit(CollId::kAllReduce);
constexpr uint8_t kAg = collBit(CollId::kAllGather);
constexpr uint8_t kRs = collBit(CollId::kReduceScatter);
constexpr uint8_t kAll = kAr | kAg | kRs | collBit(CollId::kBroadcast) | collBit(CollId::kReduce);
constexpr int kNoAlgo = -1;

// One selectable row: its name, the (algorithm, protocol) it stands for (kNoAlgo: a kernel Braid
// does not have), and the collectives it exists for.
struct Row {
  const char* name;
  int algo;
  int proto;
  uint8_t colls;
};

// NCCL 2.32's rows, then Braid's Direct (DIRECT_SIMPLE only where the direct connections have Simple FIFOs). The
// symmetric-memory kernels' names appear once per collective in NCCL (SYMK_LL is an AllGather and a ReduceScatter
// kernel): one row with both here.
constexpr Row kRows[] = {
    {"TREE_LL", kAlgoTree, kProtoLL, kAr},
    {"TREE_LL128", kAlgoTree, kProtoLL128, kAr},
    {"TREE_SIMPLE", kAlgoTree, kProtoSimple, kAr},
    {"RING_LL", kAlgoRing, kProtoLL, kAll},
    {"RING_LL128", kAlgoRing, kProtoLL128, kAll},
    {"RING_SIMPLE", kAlgoRing, kProtoSimple, kAll},
    {"COLLNET_DIRECT_SIMPLE", kAlgoCollNetDirect, kProtoSimple, kAr | kAg | kRs},
    {"COLLNET_CHAIN_SIMPLE", kAlgoCollNetChain, kProtoSimple, kAr},
    {"NVLS_SIMPLE", kAlgoNvls, kProtoSimple, kAr | kAg | kRs},
    {"NVLSTREE_SIMPLE", kAlgoNvlsTree, kProtoSimple, kAr},
    {"PAT_SIMPLE", kAlgoPat, kProtoSimple, kAg | kRs},
    {"SYMK_AGxLL_R", kNoAlgo, kNoAlgo, kAr},
    {"SYMK_AGxLLMC_R", kNoAlgo, kNoAlgo, kAr},
    {"SYMK_RSxTmaLD_AGxTmaST", kNoAlgo, kNoAlgo, kAr},
    {"SYMK_RSxLD_AGxST", kNoAlgo, kNoAlgo, kAr},
    {"SYMK_RSxLDMC_AGxSTMC", kNoAlgo, kNoAlgo, kAr},
    {"SYMK_LL", kNoAlgo, kNoAlgo, kAg | kRs},
    {"SYMK_LLMC", kNoAlgo, kNoAlgo, kAg},
    {"SYMK_TmaST", kNoAlgo, kNoAlgo, kAg},
    {"SYMK_ST", kNoAlgo, kNoAlgo, kAg},
    {"SYMK_TmaSTMC", kNoAlgo, kNoAlgo, kAg},
    {"SYMK_STMC", kNoAlgo, kNoAlgo, kAg},
    {"SYMK_RailRing_LsaSTMC", kNoAlgo, kNoAlgo, kAg},
    {"SYMK_TmaLD", kNoAlgo, kNoAlgo, kRs},
    {"SYMK_LD", kNoAlgo, kNoAlgo, kRs},
    {"SYMK_LDMC", kNoAlgo, kNoAlgo, kRs},
    {"SYMK_RailA2A_LsaLD", kNoAlgo, kNoAlgo, kRs},
    {"SYMK_RailA2A_LsaLDMC", kNoAlgo, kNoAlgo, kRs},
    {"DIRECT_LL", kAlgoDirect, kProtoLL, kAll},
    {"DIRECT_SIMPLE", kAlgoDirect, kProtoSimple, kAll},
};
constexpr int kNumRows = static_cast<int>(sizeof(kRows) / sizeof(kRows[0]));
static_assert(kNumRows <= 64, "a selection is one 64-bit set of rows");
constexpr SelectionRows kAllRows = kNumRows == 64 ? ~SelectionRows{0} : (SelectionRows{1} << kNumRows) - 1;

// The rows whose name begins with `tag` (case-insensitive); 0 for none.
SelectionRows rowsOfTag(std::string_view tag) {
  SelectionRows rows = 0;
  for (int i = 0; i < kNumRows; i++) {
    const std::string_view name(kRows[i].name);
    if (tag.size() <= name.size() && equalsIgnoreCase(name.substr(0, tag.size()), tag)) rows |= SelectionRows{1} << i;
  }
  return rows;
}

// One term: factors joined by '+' (empty factors are skipped, as between NCCL's tokens). False
// with *error for a bare '^', an unknown name, a term of no factor ("+"), or factors that select
// nothing together.
bool parseTerm(std::string_view term, SelectionRows* rows, std::string* error) {
  SelectionRows acc = kAllRows;
  int factors = 0;
  while (!term.empty()) {
    const size_t plus = term.find('+');
    std::string_view factor = term.substr(0, plus);
    term = plus == std::string_view::npos ? std::string_view() : term.substr(plus + 1);
    if (factor.empty()) continue;
    const bool negate = factor.front() == '^';
    if (negate) factor.remove_prefix(1);
    if (factor.empty()) {
      *error = "a '^' without a name";
      return false;
    }
    const SelectionRows tagged = rowsOfTag(factor);
    if (tagged == 0) {
      *error = "unknown name '" + std::string(factor) + "'";
      return false;
    }
    acc &= negate ? kAllRows & ~tagged : tagged;
    factors++;
  }
  if (factors == 0) {
    *error = "a term without a name";
    return false;
  }
  if (acc == 0) {
    *error = "a term whose names select nothing together";
    return false;
  }
  *rows = acc;
  return true;
}

}  // namespace

bool parseSelection(const std::string& text, SelectionRows* rows, std::string* error) {
  std::string compact;
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') compact.push_back(c);
  }
  std::string_view rest(compact);
  SelectionRows acc = 0;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view term = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (term.empty()) continue;  // ",," and a trailing ',' hold no term
    SelectionRows termRows = 0;
    if (!parseTerm(term, &termRows, error)) return false;
    acc |= termRows;
  }
  *rows = acc;
  return true;
}

SelectionRows selectionRowsFor(SelectionRows rows, CollId coll) {
  SelectionRows valid = 0;
  for (int i = 0; i < kNumRows; i++) {
    if ((kRows[i].colls & collBit(coll)) != 0) valid |= SelectionRows{1} << i;
  }
  return rows & valid;
}

bool selectionAllows(SelectionRows rows, AlgoId algo, ProtoId proto) {
  for (int i = 0; i < kNumRows; i++) {
    if ((rows >> i & 1) != 0 && kRows[i].algo == algo && kRows[i].proto == proto) return true;
  }
  return false;
}

std::string selectionNames(SelectionRows rows) {
  std::string names;
  for (int i = 0; i < kNumRows; i++) {
    if ((rows >> i & 1) == 0) continue;
    if (!names.empty()) names += ", ";
    names += kRows[i].name;
  }
  return names;
}

}  // namespace braid::plan
