// Hang diagnosis, the watch. The watch thread (core/peer_watch.cc) calls checkHang for every ready
// communicator. When this rank's GPU has waited in one collective for BRAID_HANG_REPORT_MS (its
// long-wait notes, core/wait_notes.h), one WARN names it and says where each rank is with it
// (hang_report.h): not launched yet, waiting in it, waiting in another one, or launched and not
// waiting. It learns that from the ranks' progress boards (progress_board.h): on this host plain
// loads from shared memory, from other hosts copies their processes' board servers send over TCP
// (board_server.h); no CUDA call and no collective, so it works while GPUs are stuck. One report per
// operation.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph_progress.h"
#include "core/peer_info.h"
#include "core/progress_board.h"

struct ncclComm;

namespace braid {

// Every rank's progress with operation `seq`, in which rank `self` waits (`own` is its board): the
// boards of the ranks on self's host and pid space read from shared memory, the others' fetched
// from their board servers (at most 2 s per look), their wait notes looked at twice, gapMs apart
// (the calling thread sleeps; from checkHang, during its registry visit, once per report); kUnknown
// where no board could be read.
std::vector<RankProgress> gatherProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                         const ProgressBoard& own, uint64_t seq, int64_t gapMs);

// The same for graph op `op` (graph_progress.h).
std::vector<GraphRankProgress> gatherGraphProgress(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                                   uint64_t op, int64_t gapMs);

// For each operation noted in point-to-point launch `rec` of rank `self`: how many matching
// operations its peer has posted (postedToward, p2p_progress.h), -1 when its board is not readable.
std::vector<int64_t> gatherMatches(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                   const P2pRecord& rec);

// For each rank: the captured point-to-point launch a replay of its waits in now (0: none), -1 for
// itself and where its board is not readable (looked at twice, gapMs apart).
std::vector<int64_t> gatherP2pGraphWaits(uint64_t commHash, int self, const std::vector<PeerInfo>& peers,
                                         int64_t gapMs);

// The watch thread's check of one communicator (visited in the registry: it is not torn down
// meanwhile, and API calls go on): its collectives, its graph ops (graph_progress.h), then its
// point-to-point kernels, eager and replayed (p2p_progress.h).
void checkHang(ncclComm* comm);

}  // namespace braid
