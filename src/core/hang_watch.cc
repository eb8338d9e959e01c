#include "core/hang_watch.h"

#include "core/comm.h"
#include "core/hang_report.h"
#include "util/log.h"
#include "util/params.h"
#include "util/shm_segment.h"

namespace braid {

bool hangReportDue(const ProgressBoard& board, uint64_t reported, int64_t nowNs, int64_t thresholdNs, OpRecord* op) {
  const uint64_t seq = completedThrough(board) + 1;
  if (seq > launchedThrough(board) || seq <= reported) return false;
  // A record overwritten meanwhile: the operation completed, or the next check sees it.
  return recordOf(board, seq, op) && nowNs - op->launchNs >= thresholdNs;
}

std::vector<RankProgress> gatherProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                         const ProgressBoard& own, uint64_t seq) {
  std::vector<RankProgress> ranks(peers.size());
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    if (r == self) {
      ranks[r] = progressOf(&own, seq);
      continue;
    }
    const PeerInfo& p = peers[r];
    if (p.pidSpace == 0 || p.pidSpace != peers[self].pidSpace) continue;  // another host: not readable here
    ShmSegment board;
    if (ShmSegment::openReadOnly(progressBoardName(commHash, r, p.pid), progressBoardBytes(), &board) != ncclSuccess) {
      continue;  // gone, or it made no board
    }
    ranks[r] = progressOf(static_cast<const ProgressBoard*>(board.ptr()), seq);
  }
  return ranks;
}

void checkHang(ncclComm* comm) {
  const int64_t thresholdMs = paramInt(ParamId::kHangReportMs);
  const ProgressBoard* board = comm->progressBoard_.load();
  if (thresholdMs <= 0 || board == nullptr || comm->state_.load() != CommState::kReady) return;
  const int64_t now = monotonicNs();
  OpRecord op{};
  if (!hangReportDue(*board, comm->hangReportedSeq_.load(), now, thresholdMs * 1000000, &op)) return;
  comm->hangReportedSeq_.store(op.seq);
  const std::vector<RankProgress> ranks = gatherProgress(comm->commHash_, comm->rank_, comm->peers_, *board, op.seq);
  WARN("comm %p (%016llx) %s", static_cast<void*>(comm), static_cast<unsigned long long>(comm->commHash_),
       hangReport(op, static_cast<double>(now - op.launchNs) * 1e-9, comm->rank_, ranks, now).c_str());
}

}  // namespace braid
