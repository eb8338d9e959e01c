// ncclCollConfig_t::algSelection: the algorithms (and protocols) one nccl*Config call may use.
//
// The grammar is NCCL 2.32's, not NCCL_ALGO's (plan.h), so that a program written for NCCL passes
// the same strings: a selection is terms joined by ',' (union), a term is factors joined by '+'
// (intersection), a factor is a name, or '^' and a name (everything except it). A name selects
// every row of the table below whose name it begins (case-insensitive): "ring" is RING_LL,
// RING_LL128 and RING_SIMPLE, "tree_ll" is TREE_LL and TREE_LL128. Whitespace is ignored; there
// are no parentheses. The rows are NCCL's (algorithm_protocol, and its symmetric-memory kernels
// SYMK_*, which Braid does not have), plus Braid's own DIRECT_LL and DIRECT_SIMPLE (the Direct
// algorithm).
//
// Simple NCCL_ALGO-style lists mean the same in both grammars ("ring", "ring,tree", "^nvls");
// "^ring,tree" does not (here: everything but Ring, or Tree), and NCCL_ALGO's "function:" prefix
// is no name here (a call names its collective already).
#pragma once

#include <cstdint>
#include <string>

#include "device/dev_types.h"
#include "plan/plan.h"

namespace braid::plan {

// A set of rows of the selection table, one bit each; 0 selects nothing.
using SelectionRows = uint64_t;

// Parses `text`. Empty terms and factors are skipped, as NCCL's tokenizer does ("ring,,tree" is
// "ring,tree"; a text of no term selects no row). A name that begins no row's name, a bare '^', a
// term of '+' only, or a term whose factors select nothing together ("ring+tree"): false, and
// *error says which (no log here: whether that is a WARN or an INFO is the caller's
// forceAlgSelection). *rows is written only on success.
[[nodiscard]] bool parseSelection(const std::string& text, SelectionRows* rows, std::string* error);

// The rows of `rows` that exist for `coll` (RING_* for every collective, TREE_* for AllReduce,
// PAT for AllGather and ReduceScatter, ...). 0: the selection names nothing `coll` has.
SelectionRows selectionRowsFor(SelectionRows rows, CollId coll);

// Whether `rows` select (algo, proto): some row of them is that pair. The SYMK rows are no pair.
bool selectionAllows(SelectionRows rows, AlgoId algo, ProtoId proto);

// The names of `rows`, comma-separated ("RING_LL, DIRECT_LL"), for messages.
std::string selectionNames(SelectionRows rows);

}  // namespace braid::plan
