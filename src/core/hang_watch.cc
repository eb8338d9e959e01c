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

// Between two looks at other ranks' wait notes: many beats of a waiting CTA (one per
// kAbortPollSpins spins of a waiting thread, milliseconds).
constexpr int64_t kBeatLookGapMs = 50;

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

// The boards of the other ranks readable from here (null where not), valid while this lives.
struct PeerBoards {
  std::vector<ShmSegment> segments;
  std::vector<const ProgressBoard*> boards;
};
PeerBoards openPeerBoards(uint64_t commHash, int self, const std::vector<PeerInfo>& peers) {
  PeerBoards open{std::vector<ShmSegment>(peers.size()), std::vector<const ProgressBoard*>(peers.size(), nullptr)};
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (r != self) open.boards[r] = openPeerBoard(commHash, self, peers, r, &open.segments[r]);
  }
  return open;
}

// The op each board's CTAs wait in now by their `notes` (0: none, or no board): two looks gapMs
// apart, so that only beats that move count.
std::vector<uint64_t> opsWaitingNow(const PeerBoards& open, DevWaitNotes ProgressBoard::*notes, int64_t gapMs) {
  const size_t n = open.boards.size();
  std::vector<WaitBeats> beats(n);
  uint64_t capture = 0;
  for (size_t r = 0; r < n; r++) {
    if (open.boards[r] != nullptr) (void)opWaitingNow(open.boards[r]->*notes, &beats[r], &capture);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(gapMs));
  std::vector<uint64_t> waiting(n, 0);
  for (size_t r = 0; r < n; r++) {
    if (open.boards[r] != nullptr) waiting[r] = opWaitingNow(open.boards[r]->*notes, &beats[r], &capture);
  }
  return waiting;
}

}  // namespace

std::vector<RankProgress> gatherProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                         const ProgressBoard& own, uint64_t seq, int64_t gapMs) {
  const PeerBoards open = openPeerBoards(commHash, self, peers);
  const std::vector<uint64_t> waiting = opsWaitingNow(open, &ProgressBoard::eagerWaits, gapMs);
  std::vector<RankProgress> ranks(peers.size());
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (r == self) {
      ranks[r] = progressOf(&own, seq, seq);
    } else if (open.boards[r] != nullptr) {
      ranks[r] = progressOf(open.boards[r], seq, waiting[r]);
    }
  }
  return ranks;
}

std::vector<GraphRankProgress> gatherGraphProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                                   uint64_t op, int64_t gapMs) {
  const PeerBoards open = openPeerBoards(commHash, self, peers);
  const std::vector<uint64_t> waiting = opsWaitingNow(open, &ProgressBoard::graphWaits, gapMs);
  std::vector<GraphRankProgress> ranks(peers.size());
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (r == self) {
      ranks[r] = graphProgressFrom(op, op);
    } else if (open.boards[r] != nullptr) {
      ranks[r] = graphProgressFrom(waiting[r], op);
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

std::vector<int64_t> gatherP2pGraphWaits(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                         int64_t gapMs) {
  const PeerBoards open = openPeerBoards(commHash, self, peers);
  const std::vector<uint64_t> waiting = opsWaitingNow(open, &ProgressBoard::p2pGraphWaits, gapMs);
  std::vector<int64_t> ranks(peers.size(), -1);
  for (size_t r = 0; r < peers.size(); r++) {
    if (open.boards[r] != nullptr) ranks[r] = static_cast<int64_t>(waiting[r]);
  }
  return ranks;
}

void checkHang(ncclComm* comm) {
  const int64_t thresholdMs = paramInt(ParamId::kHangReportMs);
  const ProgressBoard* board = comm->progressBoard_.load();
  if (thresholdMs <= 0 || board == nullptr || comm->state_.load() != CommState::kReady) return;
  const int64_t now = monotonicNs();
  const auto commId = static_cast<unsigned long long>(comm->commHash_);
  uint64_t seq = 0;
  uint64_t unused = 0;
  int64_t seenNs = 0;
  if (waitReportDue(board->eagerWaits, &comm->eagerWatch_, now, thresholdMs * 1000000, &seq, &unused, &seenNs)) {
    const std::vector<RankProgress> ranks =
        gatherProgress(comm->commHash_, comm->rank_, comm->peers_, *board, seq, kBeatLookGapMs);
    OpRecord op{};
    const bool noted = recordOf(*board, seq, &op);
    const int64_t sinceNs = noted ? op.launchNs : seenNs;
    WARN("comm %p (%016llx) %s", static_cast<void*>(comm), commId,
         hangReport(seq, noted ? &op : nullptr, static_cast<double>(now - sinceNs) * 1e-9, comm->rank_, ranks, now)
             .c_str());
  }
  uint64_t graphOp = 0;
  uint64_t captureNo = 0;
  if (waitReportDue(board->graphWaits, &comm->graphWatch_, now, thresholdMs * 1000000, &graphOp, &captureNo, &seenNs)) {
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
  if (p2pReportDue(*board, &comm->p2pWatch_, now, thresholdMs * 1000000, &rec)) {
    const std::vector<int64_t> matching = gatherMatches(comm->commHash_, comm->rank_, comm->peers_, rec);
    WARN("comm %p (%016llx) %s", static_cast<void*>(comm), commId,
         p2pHangReport(rec, static_cast<double>(now - rec.launchNs) * 1e-9, comm->rank_, matching).c_str());
  }
  if (p2pGraphReportDue(*board, &comm->p2pGraphWatch_, now, thresholdMs * 1000000, &rec)) {
    const std::vector<int64_t> waiting =
        gatherP2pGraphWaits(comm->commHash_, comm->rank_, comm->peers_, kBeatLookGapMs);
    WARN("comm %p (%016llx) %s", static_cast<void*>(comm), commId,
         p2pGraphHangReport(rec, static_cast<double>(now - rec.launchNs) * 1e-9, comm->rank_, waiting).c_str());
  }
}

}  // namespace braid
