#include "watch/hang_watch.h"

#include <chrono>
#include <thread>

#include "util/log.h"
#include "util/params.h"
#include "util/shm_segment.h"
#include "watch/board_server.h"
#include "watch/hang_report.h"

namespace braid::watch {
namespace {

// Between two looks at other ranks' wait notes: many beats of a waiting CTA (one per
// kAbortPollSpins spins of a waiting thread, milliseconds).
constexpr int64_t kBeatLookGapMs = 50;

// What one report may spend asking other hosts for boards, per look: ranks whose boards have not
// come by then are reported as not known.
constexpr std::chrono::milliseconds kFetchBudget{2000};

// Whether rank r's board is in shared memory this process can map: r runs on this host (the same
// host identity, so emulated hosts, NCCL_HOSTID, go over the network as real ones do) in the same
// pid space.
bool boardMappable(const std::vector<PeerProcess>& peers, int self, int r) {
  const PeerProcess& p = peers[r];
  return p.pidSpace != 0 && p.pidSpace == peers[self].pidSpace && p.hostHash == peers[self].hostHash;
}

// The boards of the other ranks of a communicator as this process can read them (null where it
// cannot): mapped from shared memory on this host, copies fetched from their processes' board
// servers elsewhere (board_server.h). refetch() replaces the copies with newer ones, for a second
// look; mapped boards are live anyway.
class PeerBoards {
 public:
  // only >= 0: rank `only`'s board alone, for a report that needs one peer's.
  PeerBoards(uint64_t commHash, int self, const std::vector<PeerProcess>& peers, int only = -1)
      : commHash_(commHash),
        self_(self),
        peers_(peers),
        segments_(peers.size()),
        fetched_(peers.size()),
        boards_(peers.size(), nullptr) {
    const Deadline deadline = Deadline::after(kFetchBudget);
    for (int r = 0; r < static_cast<int>(peers.size()); r++) {
      if (r != self && (only < 0 || r == only)) boards_[r] = open(r, deadline);
    }
  }

  size_t size() const { return boards_.size(); }
  const ProgressBoard* board(int r) const { return boards_[r]; }
  // Add to rank r's board times (CLOCK_MONOTONIC of its host) to get this host's.
  int64_t clockOffsetNs(int r) const { return fetched_[r].clockOffsetNs; }

  void refetch() {
    const Deadline deadline = Deadline::after(kFetchBudget);
    for (int r = 0; r < static_cast<int>(boards_.size()); r++) {
      if (boards_[r] != nullptr && !boardMappable(peers_, self_, r)) boards_[r] = open(r, deadline);
    }
  }

 private:
  const ProgressBoard* open(int r, const Deadline& deadline) {
    const PeerProcess& p = peers_[r];
    const int nRanks = static_cast<int>(peers_.size());
    if (!boardMappable(peers_, self_, r)) {
      return fetchBoard(p.boardServer, commHash_, r, nRanks, deadline, &fetched_[r]) ? fetched_[r].board() : nullptr;
    }
    if (ShmSegment::openReadOnly(progressBoardName(commHash_, r, p.pid), progressBoardBytes(nRanks), &segments_[r]) !=
        ncclSuccess) {
      return nullptr;  // gone, or it made no board
    }
    const auto* board = static_cast<const ProgressBoard*>(segments_[r].ptr());
    return board->magic == kProgressBoardMagic && board->nRanks == nRanks ? board : nullptr;
  }

  uint64_t commHash_;
  int self_;
  const std::vector<PeerProcess>& peers_;
  std::vector<ShmSegment> segments_;
  std::vector<FetchedBoard> fetched_;
  std::vector<const ProgressBoard*> boards_;
};

// The op each board's CTAs wait in now by their `notes` (0: none, or no board): two looks gapMs
// apart, so that only beats that move count.
std::vector<uint64_t> opsWaitingNow(PeerBoards* open, DevWaitNotes ProgressBoard::*notes, int64_t gapMs) {
  const size_t n = open->size();
  std::vector<WaitBeats> beats(n);
  uint64_t capture = 0;
  for (size_t r = 0; r < n; r++) {
    if (open->board(r) != nullptr) (void)opWaitingNow(open->board(r)->*notes, &beats[r], &capture);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(gapMs));
  open->refetch();
  std::vector<uint64_t> waiting(n, 0);
  for (size_t r = 0; r < n; r++) {
    if (open->board(r) != nullptr) waiting[r] = opWaitingNow(open->board(r)->*notes, &beats[r], &capture);
  }
  return waiting;
}

}  // namespace

std::vector<RankProgress> gatherProgress(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                         const ProgressBoard& own, uint64_t seq, int64_t gapMs) {
  PeerBoards open(commHash, self, peers);
  const std::vector<uint64_t> waiting = opsWaitingNow(&open, &ProgressBoard::eagerWaits, gapMs);
  std::vector<RankProgress> ranks(peers.size());
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (r == self) {
      ranks[r] = progressOf(&own, seq, seq);
    } else if (open.board(r) != nullptr) {
      ranks[r] = progressOf(open.board(r), seq, waiting[r]);
      if (ranks[r].lastLaunchNs != 0) ranks[r].lastLaunchNs += open.clockOffsetNs(r);
    }
  }
  return ranks;
}

std::vector<GraphRankProgress> gatherGraphProgress(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                                   uint64_t op, int64_t gapMs) {
  PeerBoards open(commHash, self, peers);
  const std::vector<uint64_t> waiting = opsWaitingNow(&open, &ProgressBoard::graphWaits, gapMs);
  std::vector<GraphRankProgress> ranks(peers.size());
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (r == self) {
      ranks[r] = graphProgressFrom(op, op);
    } else if (open.board(r) != nullptr) {
      ranks[r] = graphProgressFrom(waiting[r], op);
    }
  }
  return ranks;
}

std::vector<int64_t> gatherMatches(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                   const P2pRecord& rec) {
  std::vector<int64_t> matching;
  for (int i = 0; i < rec.nOps && i < kP2pOpsNoted; i++) {
    const int peer = rec.ops[i].peer;
    const PeerBoards open(commHash, self, peers, peer);
    const ProgressBoard* board = open.board(peer);
    matching.push_back(board != nullptr ? static_cast<int64_t>(postedToward(*board, self, rec.ops[i])) : -1);
  }
  return matching;
}

std::vector<int64_t> gatherP2pGraphWaits(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                         int64_t gapMs) {
  PeerBoards open(commHash, self, peers);
  const std::vector<uint64_t> waiting = opsWaitingNow(&open, &ProgressBoard::p2pGraphWaits, gapMs);
  std::vector<int64_t> ranks(peers.size(), -1);
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (open.board(r) != nullptr) ranks[r] = static_cast<int64_t>(waiting[r]);
  }
  return ranks;
}

void checkHang(const HangSubject& subject, const ProgressBoard& board, HangMemory* memory) {
  const int64_t thresholdMs = paramInt(ParamId::kHangReportMs);
  if (thresholdMs <= 0) return;
  const int64_t now = monotonicNs();
  const int64_t thresholdNs = thresholdMs * 1000000;
  const void* comm = subject.handle;
  const auto commId = static_cast<unsigned long long>(subject.commHash);
  const int self = subject.rank;
  const std::vector<PeerProcess>& peers = *subject.peers;
  uint64_t seq = 0;
  uint64_t unused = 0;
  int64_t seenNs = 0;
  if (waitReportDue(board.eagerWaits, &memory->eager, now, thresholdNs, &seq, &unused, &seenNs)) {
    const std::vector<RankProgress> ranks = gatherProgress(subject.commHash, self, peers, board, seq, kBeatLookGapMs);
    OpRecord op{};
    const bool noted = recordOf(board, seq, &op);
    const int64_t sinceNs = noted ? op.launchNs : seenNs;
    WARN("comm %p (%016llx) %s", comm, commId,
         hangReport(seq, noted ? &op : nullptr, static_cast<double>(now - sinceNs) * 1e-9, self, ranks, now).c_str());
  }
  uint64_t graphOp = 0;
  uint64_t captureNo = 0;
  if (waitReportDue(board.graphWaits, &memory->graph, now, thresholdNs, &graphOp, &captureNo, &seenNs)) {
    const std::vector<GraphRankProgress> ranks =
        gatherGraphProgress(subject.commHash, self, peers, graphOp, kBeatLookGapMs);
    OpRecord capture{};
    const bool noted = captureRecordOf(board, captureNo, &capture);
    WARN("comm %p (%016llx) %s", comm, commId,
         graphHangReport(graphOp, noted ? &capture : nullptr, static_cast<double>(now - seenNs) * 1e-9, self, ranks)
             .c_str());
  }
  P2pRecord rec{};
  if (p2pReportDue(board, &memory->p2p, now, thresholdNs, &rec)) {
    const std::vector<int64_t> matching = gatherMatches(subject.commHash, self, peers, rec);
    WARN("comm %p (%016llx) %s", comm, commId,
         p2pHangReport(rec, static_cast<double>(now - rec.launchNs) * 1e-9, self, matching).c_str());
  }
  if (p2pGraphReportDue(board, &memory->p2pGraph, now, thresholdNs, &rec)) {
    const std::vector<int64_t> waiting = gatherP2pGraphWaits(subject.commHash, self, peers, kBeatLookGapMs);
    WARN("comm %p (%016llx) %s", comm, commId,
         p2pGraphHangReport(rec, static_cast<double>(now - rec.launchNs) * 1e-9, self, waiting).c_str());
  }
}

}  // namespace braid::watch
