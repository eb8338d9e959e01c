// Hang diagnosis, the watch. The watch thread (peer_watch.h) calls checkHang for every ready
// communicator (comm_watch.h). When this rank's GPU has waited in one collective for BRAID_HANG_REPORT_MS (its
// long-wait notes, wait_notes.h), one WARN names it and says where each rank is with it
// (hang_report.h): not launched yet, waiting in it, waiting in another one, or launched and not
// waiting. It learns that from the ranks' progress boards (progress_board.h): on this host plain
// loads from shared memory, from other hosts copies their processes' board servers send over TCP
// (board_server.h); no CUDA call and no collective, so it works while GPUs are stuck. One report per
// operation.
#pragma once

#include <cstdint>
#include <vector>

#include "watch/graph_progress.h"
#include "watch/p2p_progress.h"
#include "watch/peer_process.h"
#include "watch/progress_board.h"
#include "watch/wait_notes.h"

namespace braid::watch {

// Every rank's progress with operation `seq`, in which rank `self` waits (`own` is its board): the
// boards of the ranks on self's host and pid space read from shared memory, the others' fetched
// from their board servers (at most 2 s per look), their wait notes looked at twice, gapMs apart
// (the calling thread sleeps; from checkHang, during its visit, once per report); kUnknown
// where no board could be read.
std::vector<RankProgress> gatherProgress(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                         const ProgressBoard& own, uint64_t seq, int64_t gapMs);

// The same for graph op `op` (graph_progress.h).
std::vector<GraphRankProgress> gatherGraphProgress(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                                   uint64_t op, int64_t gapMs);

// For each operation noted in point-to-point launch `rec` of rank `self`: how many matching
// operations its peer has posted (postedToward, p2p_progress.h), -1 when its board is not readable.
std::vector<int64_t> gatherMatches(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                   const P2pRecord& rec);

// For each rank: the captured point-to-point launch a replay of its waits in now (0: none), -1 for
// itself and where its board is not readable (looked at twice, gapMs apart).
std::vector<int64_t> gatherP2pGraphWaits(uint64_t commHash, int self, const std::vector<PeerProcess>& peers,
                                         int64_t gapMs);

// The watch thread's memory of the waits it has seen and reported, per set of long-wait notes
// (wait_notes.h): collectives, graph ops (graph_progress.h) and point-to-point launches, eager and
// replayed (p2p_progress.h).
struct HangMemory {
  WaitWatch eager;
  WaitWatch graph;
  WaitWatch p2p;
  WaitWatch p2pGraph;
};

// Whom a report names: the communicator (`handle`, its ncclComm, and its hash) and this rank.
struct HangSubject {
  const void* handle;
  uint64_t commHash;
  int rank;
  const std::vector<PeerProcess>* peers;
};

// The watch thread's check of one ready communicator whose rank's board is `board` (its data path
// is not torn down meanwhile, and API calls go on): its collectives, its graph ops
// (graph_progress.h), then its point-to-point kernels, eager and replayed (p2p_progress.h). At most
// one WARN per stuck operation; nothing with BRAID_HANG_REPORT_MS 0.
void checkHang(const HangSubject& subject, const ProgressBoard& board, HangMemory* memory);

}  // namespace braid::watch
