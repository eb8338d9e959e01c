#include "watch/p2p_progress.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace braid::watch {
namespace {

std::string describe(const P2pOpNote& op) {
  char index[24] = "";
  if (op.index != 0) std::snprintf(index, sizeof(index), " #%" PRIu64, op.index);
  char text[112];
  std::snprintf(text, sizeof(text), "%s%s %s rank %d (%" PRIu64 " bytes)", op.isSend ? "send" : "receive", index,
                op.isSend ? "to" : "from", op.peer, op.bytes);
  return text;
}

// The record of a launch (or capture) `seq` of `ops`; each operation to another rank is numbered by
// indexOf(op) (0: not numbered).
template <typename IndexOf>
P2pRecord recordOps(const ProgressBoard& board, uint64_t seq, int nCtas, int64_t launchNs,
                    const std::vector<P2pOpPosted>& ops, const IndexOf& indexOf) {
  P2pRecord rec{};
  rec.seq = seq;
  rec.launchNs = launchNs;
  rec.nCtas = nCtas;
  for (const P2pOpPosted& op : ops) {
    if (op.peer == board.rank || op.peer < 0 || op.peer >= board.nRanks) continue;
    const uint64_t index = indexOf(op);
    if (rec.nOps < kP2pOpsNoted) rec.ops[rec.nOps] = P2pOpNote{index, op.bytes, op.peer, op.isSend ? 1 : 0};
    rec.nOps++;
  }
  return rec;
}

// Whether a report is due for the launch (or capture) whose CTAs wait in `notes`; *rec from
// recordOf, or its number alone (nOps 0) when the board no longer holds it; *seenNs when it was
// first seen waiting.
template <typename RecordOf>
bool reportDue(const DevWaitNotes& notes, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs,
               const RecordOf& recordOf, P2pRecord* rec, int64_t* seenNs) {
  uint64_t seq = 0;
  uint64_t unused = 0;
  if (!waitReportDue(notes, watch, nowNs, thresholdNs, &seq, &unused, seenNs)) return false;
  if (!recordOf(seq, rec)) {
    *rec = P2pRecord{};
    rec->seq = seq;
  }
  return true;
}

// "N operations: send #5 to rank 1 (4096 bytes); ..." of rec (at most kP2pOpsNoted named).
std::string describeOps(const P2pRecord& rec) {
  std::string text = std::to_string(rec.nOps) + " operations";
  const int shown = std::min(rec.nOps, kP2pOpsNoted);
  for (int i = 0; i < shown; i++) text += (i == 0 ? ": " : "; ") + describe(rec.ops[i]);
  if (rec.nOps > shown) text += "; ...";
  return text;
}

}  // namespace

uint64_t noteP2pLaunch(ProgressBoard* board, int nCtas, int64_t launchNs, const std::vector<P2pOpPosted>& ops) {
  uint64_t* posted = p2pPosted(board);
  const P2pRecord rec = recordOps(*board, board->p2pLaunched + 1, nCtas, launchNs, ops, [&](const P2pOpPosted& op) {
    uint64_t* count = &posted[(op.isSend ? 0 : board->nRanks) + op.peer];
    const uint64_t index = *count + 1;  // only the owner writes it
    __atomic_store_n(count, index, __ATOMIC_RELEASE);
    return index;
  });
  putRecord(board->recentP2p, &board->p2pLaunched, rec);
  return rec.seq;
}

uint64_t noteP2pCapture(ProgressBoard* board, int nCtas, const std::vector<P2pOpPosted>& ops) {
  const P2pRecord rec =
      recordOps(*board, board->p2pCaptured + 1, nCtas, 0, ops, [](const P2pOpPosted& /*op*/) { return uint64_t{0}; });
  putRecord(board->p2pCaptures, &board->p2pCaptured, rec);
  return rec.seq;
}

bool p2pCaptureRecordOf(const ProgressBoard& board, uint64_t capture, P2pRecord* out) {
  return getRecord(board.p2pCaptures, &board.p2pCaptured, capture, out);
}

uint64_t p2pLaunchedThrough(const ProgressBoard& board) { return loadAcquire(&board.p2pLaunched); }

bool p2pRecordOf(const ProgressBoard& board, uint64_t seq, P2pRecord* out) {
  return getRecord(board.recentP2p, &board.p2pLaunched, seq, out);
}

uint64_t postedToward(const ProgressBoard& board, int self, const P2pOpNote& mine) {
  if (self < 0 || self >= board.nRanks) return 0;
  // My send is matched by its receives (second half), my receive by its sends (first half).
  return loadAcquire(&p2pPosted(&board)[(mine.isSend != 0 ? board.nRanks : 0) + self]);
}

bool p2pReportDue(const ProgressBoard& board, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs, P2pRecord* rec) {
  auto recordOf = [&board](uint64_t seq, P2pRecord* out) { return p2pRecordOf(board, seq, out); };
  int64_t seenNs = 0;
  if (!reportDue(board.p2pWaits, watch, nowNs, thresholdNs, recordOf, rec, &seenNs)) return false;
  if (rec->nOps == 0) rec->launchNs = seenNs;
  return true;
}

bool p2pGraphReportDue(const ProgressBoard& board, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs,
                       P2pRecord* rec) {
  auto recordOf = [&board](uint64_t capture, P2pRecord* out) { return p2pCaptureRecordOf(board, capture, out); };
  int64_t seenNs = 0;
  if (!reportDue(board.p2pGraphWaits, watch, nowNs, thresholdNs, recordOf, rec, &seenNs)) return false;
  rec->launchNs = seenNs;  // a replay's launch is not known
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
  std::snprintf(head, sizeof(head), "rank %d: point-to-point launch #%" PRIu64 " (", self, rec.seq);
  std::string text = head + describeOps(rec);
  const int shown = std::min(rec.nOps, kP2pOpsNoted);
  char stuck[64];
  std::snprintf(stuck, sizeof(stuck), ") has not completed %.1f s after its launch.", stuckSeconds);
  text += stuck;
  std::vector<int> unmatched;
  for (int i = 0; i < shown && i < static_cast<int>(matching.size()); i++) {
    const P2pOpNote& op = rec.ops[i];
    const char* theirs = op.isSend != 0 ? "receives from" : "sends to";
    char line[200];
    if (matching[i] < 0) {
      std::snprintf(line, sizeof(line), " Rank %d: not known (gone, or no answer from its host).", op.peer);
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

std::string p2pGraphHangReport(const P2pRecord& rec, double stuckSeconds, int self,
                               const std::vector<int64_t>& peerWaiting) {
  char head[160];
  std::snprintf(head, sizeof(head),
                "rank %d: a replay of point-to-point launch #%" PRIu64 " captured in a CUDA graph (", self, rec.seq);
  std::string text = head;
  text += rec.nOps == 0 ? "older than the " + std::to_string(kP2pCapturesNoted) + " captures the board describes"
                        : describeOps(rec);
  char stuck[64];
  std::snprintf(stuck, sizeof(stuck), ") has been waiting for %.1f s.", stuckSeconds);
  text += stuck;
  std::vector<int> peers;  // each peer once, in the order of the operations
  for (int i = 0; i < std::min(rec.nOps, kP2pOpsNoted); i++) {
    if (std::find(peers.begin(), peers.end(), rec.ops[i].peer) == peers.end()) peers.push_back(rec.ops[i].peer);
  }
  bool absent = false;
  for (int peer : peers) {
    const int64_t waiting = peer < static_cast<int>(peerWaiting.size()) ? peerWaiting[peer] : -1;
    char line[160];
    if (waiting < 0) {
      std::snprintf(line, sizeof(line), " Rank %d: not known (gone, or no answer from its host).", peer);
    } else if (waiting == 0) {
      std::snprintf(line, sizeof(line), " Rank %d waits in no replayed point-to-point launch.", peer);
      absent = true;
    } else {
      std::snprintf(line, sizeof(line),
                    " Rank %d waits in a replay of its captured point-to-point launch #%" PRId64 ".", peer, waiting);
    }
    text += line;
  }
  if (absent) {
    text +=
        " Look at the ranks that wait in none: their process has not replayed its graph as often as this one (or "
        "replayed graphs in another order), or is stuck before it.";
  }
  return text;
}

}  // namespace braid::watch
