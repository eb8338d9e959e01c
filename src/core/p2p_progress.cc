#include "core/p2p_progress.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace braid {
namespace {

std::string describe(const P2pOpNote& op) {
  char text[96];
  std::snprintf(text, sizeof(text), "%s #%" PRIu64 " %s rank %d (%" PRIu64 " bytes)", op.isSend ? "send" : "receive",
                op.index, op.isSend ? "to" : "from", op.peer, op.bytes);
  return text;
}

}  // namespace

uint64_t noteP2pLaunch(ProgressBoard* board, int nCtas, int64_t launchNs, const std::vector<P2pOpPosted>& ops) {
  P2pRecord rec{};
  rec.seq = board->p2pLaunched + 1;  // only the owner writes it
  rec.launchNs = launchNs;
  rec.nCtas = nCtas;
  uint64_t* posted = p2pPosted(board);
  for (const P2pOpPosted& op : ops) {
    if (op.peer == board->rank || op.peer < 0 || op.peer >= board->nRanks) continue;
    uint64_t* count = &posted[(op.isSend ? 0 : board->nRanks) + op.peer];
    const uint64_t index = *count + 1;
    __atomic_store_n(count, index, __ATOMIC_RELEASE);
    if (rec.nOps < kP2pOpsNoted) rec.ops[rec.nOps] = P2pOpNote{index, op.bytes, op.peer, op.isSend ? 1 : 0};
    rec.nOps++;
  }
  board->recentP2p[rec.seq % kRecentP2pLaunches] = rec;
  __atomic_store_n(&board->p2pLaunched, rec.seq, __ATOMIC_RELEASE);
  return rec.seq;
}

uint64_t p2pLaunchedThrough(const ProgressBoard& board) { return loadAcquire(&board.p2pLaunched); }

bool p2pRecordOf(const ProgressBoard& board, uint64_t seq, P2pRecord* out) {
  if (seq == 0 || seq > p2pLaunchedThrough(board)) return false;
  *out = board.recentP2p[seq % kRecentP2pLaunches];
  return out->seq == seq;  // a later launch may have reused the slot
}

uint64_t postedToward(const ProgressBoard& board, int self, const P2pOpNote& mine) {
  if (self < 0 || self >= board.nRanks) return 0;
  // My send is matched by its receives (second half), my receive by its sends (first half).
  return loadAcquire(&p2pPosted(&board)[(mine.isSend != 0 ? board.nRanks : 0) + self]);
}

bool p2pReportDue(const ProgressBoard& board, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs, P2pRecord* rec) {
  uint64_t seq = 0;
  uint64_t unused = 0;
  int64_t seenNs = 0;
  if (!waitReportDue(board.p2pWaits, watch, nowNs, thresholdNs, &seq, &unused, &seenNs)) return false;
  if (!p2pRecordOf(board, seq, rec)) {
    *rec = P2pRecord{};
    rec->seq = seq;
    rec->launchNs = seenNs;
  }
  return true;
}

std::string p2pHangReport(const P2pRecord& rec, double stuckSeconds, int self, const std::vector<int64_t>& matching) {
  char head[200];
  if (rec.nOps == 0) {
    std::snprintf(head, sizeof(head),
                  "rank %d: point-to-point launch #%" PRIu64
                  " (older than the %d launches the board describes) has been waiting %.1f s.",
                  self, rec.seq, kRecentP2pLaunches, stuckSeconds);
    return head;
  }
  std::snprintf(head, sizeof(head), "rank %d: point-to-point launch #%" PRIu64 " (%d operations", self, rec.seq,
                rec.nOps);
  std::string text = head;
  const int shown = std::min(rec.nOps, kP2pOpsNoted);
  for (int i = 0; i < shown; i++) text += (i == 0 ? ": " : "; ") + describe(rec.ops[i]);
  if (rec.nOps > shown) text += "; ...";
  char stuck[64];
  std::snprintf(stuck, sizeof(stuck), ") has not completed %.1f s after its launch.", stuckSeconds);
  text += stuck;
  std::vector<int> unmatched;
  for (int i = 0; i < shown && i < static_cast<int>(matching.size()); i++) {
    const P2pOpNote& op = rec.ops[i];
    const char* theirs = op.isSend != 0 ? "receives from" : "sends to";
    char line[200];
    if (matching[i] < 0) {
      std::snprintf(line, sizeof(line), " Rank %d: not known (another host, or gone).", op.peer);
    } else if (static_cast<uint64_t>(matching[i]) < op.index) {
      std::snprintf(line, sizeof(line), " Rank %d has posted %" PRId64 " %s rank %d, so %s has no match yet.", op.peer,
                    matching[i], theirs, self, describe(op).c_str());
      unmatched.push_back(op.peer);
    } else {
      std::snprintf(line, sizeof(line), " Rank %d has posted the match of %s.", op.peer, describe(op).c_str());
    }
    text += line;
  }
  if (!unmatched.empty()) {
    text +=
        " Look at the ranks whose match is missing: their code has not called the matching ncclSend/ncclRecv (a "
        "missing or reordered call, or a different peer), or is stuck before it.";
  }
  return text;
}

}  // namespace braid
