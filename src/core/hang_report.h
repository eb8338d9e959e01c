// Hang diagnosis, the words: the one WARN that names a collective this rank's GPU has waited in
// long, and where every rank is with it. Pure text from progress boards (core/progress_board.h), so it is
// tested on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/progress_board.h"
#include "util/text.h"

namespace braid {

// "AllReduce #42 (1048576 x float32, sum, 8 CTAs)".
std::string describeOp(const OpRecord& op);

// How the reports list ranks: "0-3, 5, 7" (util/text.h's rankList).
constexpr RankListFormat kReportRanks{", ", true};

// Appends "rank r (note)" to a "; "-separated list.
void appendRankNote(std::string* list, int rank, const std::string& note);

// The report of operation `seq` (`op`: its record on rank `self`, null when no longer noted), which
// has not completed `stuckSeconds` after its launch (without a record: has waited that long); ranks[r] is rank r's
// progress with it, nowNs the monotonic time now.
std::string hangReport(uint64_t seq, const OpRecord* op, double stuckSeconds, int self,
                       const std::vector<RankProgress>& ranks, int64_t nowNs);

}  // namespace braid
