#include "core/hang_report.h"

#include <cinttypes>
#include <cstdio>

#include "plan/plan.h"

namespace braid {
namespace {

const char* dtypeName(int dtype) {
  static const char* const kNames[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                                       "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return dtype >= 0 && dtype < static_cast<int>(sizeof(kNames) / sizeof(kNames[0])) ? kNames[dtype] : "?";
}

const char* opName(const OpRecord& op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};
  if (op.userOp != 0) return "premulsum";
  return op.op >= 0 && op.op < 5 ? kNames[op.op] : "?";
}

std::string secondsAgo(int64_t thenNs, int64_t nowNs) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.1f s ago", static_cast<double>(nowNs - thenNs) * 1e-9);
  return text;
}

}  // namespace

std::string describeOp(const OpRecord& op) {
  const auto coll = static_cast<CollId>(op.coll);
  char text[160];
  int n = std::snprintf(text, sizeof(text), "%s #%" PRIu64 " (%" PRIu64 " x %s", plan::collName(coll), op.seq, op.count,
                        dtypeName(op.dtype));
  if (collUsesOp(coll) && n < static_cast<int>(sizeof(text)))
    n += std::snprintf(text + n, sizeof(text) - n, ", %s", opName(op));
  if (collUsesRoot(coll) && n < static_cast<int>(sizeof(text)))
    n += std::snprintf(text + n, sizeof(text) - n, ", root %d", op.root);
  if (n < static_cast<int>(sizeof(text))) std::snprintf(text + n, sizeof(text) - n, ", %d CTAs)", op.nChannels);
  return text;
}

void appendRankNote(std::string* list, int rank, const std::string& note) {
  *list += (list->empty() ? "rank " : "; rank ") + std::to_string(rank) + " (" + note + ")";
}

std::string hangReport(uint64_t seq, const OpRecord* op, double stuckSeconds, int self,
                       const std::vector<RankProgress>& ranks, int64_t nowNs) {
  using Where = RankProgress::Where;
  std::vector<int> waiting, done, notWaiting, unknown;
  std::string notLaunched, elsewhere;
  for (int r = 0; r < static_cast<int>(ranks.size()); r++) {
    const RankProgress& p = ranks[r];
    switch (p.where) {
      case Where::kNotLaunched:
        appendRankNote(&notLaunched, r,
                       "its last: #" + std::to_string(p.launched) +
                           (p.lastLaunchNs != 0 ? ", launched " + secondsAgo(p.lastLaunchNs, nowNs) : std::string()));
        break;
      case Where::kWaitingInIt:
        waiting.push_back(r);
        break;
      case Where::kWaitingElsewhere:
        appendRankNote(&elsewhere, r, "#" + std::to_string(p.waitingOp));
        break;
      case Where::kDone:
        done.push_back(r);
        break;
      case Where::kNotWaiting:
        notWaiting.push_back(r);
        break;
      default:
        unknown.push_back(r);
        break;
    }
  }
  std::string text = "rank " + std::to_string(self) + ": ";
  text += op != nullptr ? describeOp(*op) : "collective #" + std::to_string(seq);
  char stuck[64];
  if (op != nullptr) {
    std::snprintf(stuck, sizeof(stuck), " has not completed %.1f s after its launch.", stuckSeconds);
  } else {
    std::snprintf(stuck, sizeof(stuck), " has waited %.1f s.", stuckSeconds);
  }
  text += stuck;
  if (!notLaunched.empty()) text += " Not launched by: " + notLaunched + ".";
  if (!waiting.empty()) text += " Waiting in it: ranks " + rankList(waiting, kReportRanks) + ".";
  if (!elsewhere.empty()) text += " Waiting in an earlier collective: " + elsewhere + ".";
  if (!done.empty()) text += " Done with it: ranks " + rankList(done, kReportRanks) + ".";
  if (!notWaiting.empty()) {
    text +=
        " Launched it, waiting in no collective, not seen done (their GPU has not begun it: earlier work on "
        "its stream; or it has just ended): ranks " +
        rankList(notWaiting, kReportRanks) + ".";
  }
  if (!unknown.empty())
    text += " Not known (gone, or no answer from their host): ranks " + rankList(unknown, kReportRanks) + ".";
  if (!notLaunched.empty()) {
    text +=
        " Look at the ranks that have not launched it: their code has not called it (a skipped or reordered "
        "collective), or is stuck before it.";
  }
  return text;
}

}  // namespace braid
