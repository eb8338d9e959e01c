#include "core/graph_progress.h"

#include <cstdio>

#include "core/hang_report.h"

namespace braid {

uint64_t noteCapture(ProgressBoard* board, OpRecord op) {
  op.seq = board->captured + 1;
  putRecord(board->captures, &board->captured, op);
  return op.seq;
}

bool captureRecordOf(const ProgressBoard& board, uint64_t capture, OpRecord* out) {
  return getRecord(board.captures, &board.captured, capture, out);
}

GraphRankProgress graphProgressFrom(uint64_t waitingOp, uint64_t op) {
  GraphRankProgress p;
  p.op = waitingOp;
  p.where = waitingOp == 0    ? GraphRankProgress::Where::kNotWaiting
            : waitingOp == op ? GraphRankProgress::Where::kWaitingInIt
                              : GraphRankProgress::Where::kWaitingElsewhere;
  return p;
}

std::string graphHangReport(uint64_t op, const OpRecord* capture, double stuckSeconds, int self,
                            const std::vector<GraphRankProgress>& ranks) {
  using Where = GraphRankProgress::Where;
  std::vector<int> waiting, notWaiting, unknown;
  std::string elsewhere;
  for (int r = 0; r < static_cast<int>(ranks.size()); r++) {
    switch (ranks[r].where) {
      case Where::kWaitingInIt:
        waiting.push_back(r);
        break;
      case Where::kWaitingElsewhere:
        appendRankNote(&elsewhere, r, "#" + std::to_string(ranks[r].op));
        break;
      case Where::kNotWaiting:
        notWaiting.push_back(r);
        break;
      default:
        unknown.push_back(r);
        break;
    }
  }
  char text[160];
  std::snprintf(text, sizeof(text), "rank %d: graph op #%llu of this communicator, ", self,
                static_cast<unsigned long long>(op));
  std::string out = text;
  out += capture != nullptr ? "captured " + describeOp(*capture) : std::string("a captured collective");
  std::snprintf(text, sizeof(text), ", has been waiting for %.1f s.", stuckSeconds);
  out += text;
  if (!waiting.empty()) out += " Waiting in it: ranks " + rankList(waiting, kReportRanks) + ".";
  if (!elsewhere.empty()) out += " Waiting in another graph op: " + elsewhere + ".";
  if (!notWaiting.empty()) out += " Not waiting in a graph op: ranks " + rankList(notWaiting, kReportRanks) + ".";
  if (!unknown.empty())
    out += " Not known (gone, or no answer from their host): ranks " + rankList(unknown, kReportRanks) + ".";
  if (!notWaiting.empty() || !elsewhere.empty()) {
    out +=
        " Look at the ranks not waiting in it: their process has not replayed the graph as often as this one (or "
        "replayed graphs in another order), or is stuck before it.";
  }
  return out;
}

}  // namespace braid
