#include "core/hang_watch.h"

#include <chrono>
#include <thread>

#include "core/comm.h"
#include "core/graph_progress.h"
#include "core/hang_report.h"
#include "core/p2p_progress.h"
#include "util/log.h"
#include "util/params.h"
#include "util/shm_segment.h"

namespace braid {
namespace {

// Between two looks at other ranks' graph wait notes: many beats of a waiting CTA (one per
// kAbortPollSpins spins of a waiting thread, milliseconds).
constexpr int64_t kBeatLookGapMs = 50;

}  // namespace

bool hangReportDue(const ProgressBoard& board, uint64_t reported, int64_t nowNs, int64_t thresholdNs, OpRecord* op) {
  const uint64_t seq = completedThrough(board) + 1;
  if (seq > launchedThrough(board) || seq <= reported) return false;
  // A record overwritten meanwhile: the operation completed, or the next check sees it.
  return recordOf(board, seq, op) && nowNs - op->launchNs >= thresholdNs;
}

namespace {

// Rank r's board, when r shares this process's pid space and has one: read-only, valid while
// *segment lives.
const ProgressBoard* openPeerBoard(uint64_t commHash, int self, const std::vector<PeerInfo>& peers, int r,
                                   ShmSegment* segment) {
  const PeerInfo& p = peers[r];
  if (p.pidSpace == 0 || p.pidSpace != peers[self].pidSpace) return nullptr;  // another host: not readable here
  const int nRanks = static_cast<int>(peers.size());
  if (ShmSegment::openReadOnly(progressBoardName(commHash, r, p.pid), progressBoardBytes(nRanks), segment) !=
      ncclSuccess) {
    return nullptr;  // gone, or it made no board
  }
  const auto* board = static_cast<const ProgressBoard*>(segment->ptr());
  return board->magic == kProgressBoardMagic && board->nRanks == nRanks ? board : nullptr;
}

}  // namespace

std::vector<RankProgress> gatherProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                         const ProgressBoard& own, uint64_t seq) {
  std::vector<RankProgress> ranks(peers.size());
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    ShmSegment segment;
    const ProgressBoard* board = r == self ? &own : openPeerBoard(commHash, self, peers, r, &segment);
    if (board != nullptr) ranks[r] = progressOf(board, seq);
  }
  return ranks;
}

std::vector<GraphRankProgress> gatherGraphProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                                   uint64_t op, int64_t gapMs) {
  const size_t n = peers.size();
  std::vector<ShmSegment> segments(n);
  std::vector<const ProgressBoard*> boards(n, nullptr);
  std::vector<WaitBeats> beats(n);
  uint64_t capture = 0;
  for (size_t r = 0; r < n; r++) {
    if (static_cast<int>(r) == self) continue;
    boards[r] = openPeerBoard(commHash, self, peers, static_cast<int>(r), &segments[r]);
    if (boards[r] != nullptr) (void)graphOpWaitingNow(*boards[r], &beats[r], &capture);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(gapMs));
  std::vector<GraphRankProgress> ranks(n);
  for (size_t r = 0; r < n; r++) {
    if (static_cast<int>(r) == self) {
      ranks[r] = graphProgressFrom(op, op);
    } else if (boards[r] != nullptr) {
      ranks[r] = graphProgressFrom(graphOpWaitingNow(*boards[r], &beats[r], &capture), op);
    }
  }
  return ranks;
}

std::vector<int64_t> gatherMatches(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                   const P2pRecord& rec) {
  std::vector<int64_t> matching;
  for (int i = 0; i < rec.nOps && i < kP2pOpsNoted; i++) {
    const int peer = rec.ops[i].peer;
    ShmSegment segment;
    const ProgressBoard* board = peer >= 0 && peer < static_cast<int>(peers.size())
                                     ? openPeerBoard(commHash, self, peers, peer, &segment)
                                     : nullptr;
    matching.push_back(board != nullptr ? static_cast<int64_t>(postedToward(*board, self, rec.ops[i])) : -1);
  }
  return matching;
}

void checkHang(ncclComm* comm) {
  const int64_t thresholdMs = paramInt(ParamId::kHangReportMs);
  const ProgressBoard* board = comm->progressBoard_.load();
  if (thresholdMs <= 0 || board == nullptr || comm->state_.load() != CommState::kReady) return;
  const int64_t now = monotonicNs();
  const auto commId = static_cast<unsigned long long>(comm->commHash_);
  OpRecord op{};
  if (hangReportDue(*board, comm->hangReportedSeq_.load(), now, thresholdMs * 1000000, &op)) {
    comm->hangReportedSeq_.store(op.seq);
    const std::vector<RankProgress> ranks = gatherProgress(comm->commHash_, comm->rank_, comm->peers_, *board, op.seq);
    WARN("comm %p (%016llx) %s", static_cast<void*>(comm), commId,
         hangReport(op, static_cast<double>(now - op.launchNs) * 1e-9, comm->rank_, ranks, now).c_str());
  }
  uint64_t graphOp = 0;
  uint64_t captureNo = 0;
  int64_t seenNs = 0;
  if (graphReportDue(*board, &comm->graphWatch_, now, thresholdMs * 1000000, &graphOp, &captureNo, &seenNs)) {
    const std::vector<GraphRankProgress> ranks =
        gatherGraphProgress(comm->commHash_, comm->rank_, comm->peers_, graphOp, kBeatLookGapMs);
    OpRecord capture{};
    const bool noted = captureRecordOf(*board, captureNo, &capture);
    WARN("comm %p (%016llx) %s", static_cast<void*>(comm), commId,
         graphHangReport(graphOp, noted ? &capture : nullptr, static_cast<double>(now - seenNs) * 1e-9, comm->rank_,
                         ranks)
             .c_str());
  }
  P2pRecord rec{};
  if (p2pReportDue(*board, comm->p2pHangReportedSeq_.load(), now, thresholdMs * 1000000, &rec)) {
    comm->p2pHangReportedSeq_.store(rec.seq);
    const std::vector<int64_t> matching = gatherMatches(comm->commHash_, comm->rank_, comm->peers_, rec);
    WARN("comm %p (%016llx) %s", static_cast<void*>(comm), commId,
         p2pHangReport(rec, static_cast<double>(now - rec.launchNs) * 1e-9, comm->rank_, matching).c_str());
  }
}

}  // namespace braid
