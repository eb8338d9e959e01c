// Hang diagnosis of point-to-point operations. Sends and receives do not run in the same order on
// every rank, so they cannot be numbered like collectives; what does match is the k-th send from
// rank a to rank b with the k-th receive b posts from a. A rank's progress board (progress_board.h)
// therefore counts, per peer, the sends it posted to it and the receives it posted from it, and
// records each point-to-point kernel with the index of each of its operations. When the CTAs of such
// a kernel have waited in it for BRAID_HANG_REPORT_MS (its long-wait notes, watch/wait_notes.h), one
// WARN lists its operations and, for each, whether the peer has posted the matching one: "rank 1
// has posted 4 receives from rank 0, so send #5 has no match yet" points at the missing or
// reordered ncclRecv.
// A replay of a point-to-point kernel captured in a CUDA graph runs without Braid's host code, so
// nothing is counted then: the host numbers and notes each capture, a replay that waits long notes
// its capture number (p2pGraphWaits), and the report says, for each peer, whether it waits in a
// replay of one of its own captured point-to-point launches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "watch/progress_board.h"
#include "watch/wait_notes.h"

namespace braid::watch {

// One send or receive of a launch, as the caller issued it.
struct P2pOpPosted {
  int peer;
  bool isSend;
  uint64_t bytes;
};

// Owner side: counts `ops` (in issue order; self operations are not counted) into the board's
// per-peer totals and notes the launch, whose number it returns.
uint64_t noteP2pLaunch(ProgressBoard* board, int nCtas, int64_t launchNs, const std::vector<P2pOpPosted>& ops);

// Owner side, at capture: numbers and notes a captured launch of `ops` (not counted in the per-peer
// totals; its operations get index 0) and returns its capture number.
uint64_t noteP2pCapture(ProgressBoard* board, int nCtas, const std::vector<P2pOpPosted>& ops);

// Reader side (atomic loads of what the owner and its GPU write).
uint64_t p2pLaunchedThrough(const ProgressBoard& board);
bool p2pRecordOf(const ProgressBoard& board, uint64_t seq, P2pRecord* out);
// Capture c as noted, or false when a later capture has reused its slot (or there is none).
bool p2pCaptureRecordOf(const ProgressBoard& board, uint64_t capture, P2pRecord* out);
// How many operations `board`'s rank posted toward `peer` in the direction that matches `mine`
// (an operation of rank `self`): its receives from self for a send, its sends to self for a receive.
uint64_t postedToward(const ProgressBoard& board, int self, const P2pOpNote& mine);

// Called at every check of `board` (the watch's memory of its p2pWaits in *watch): whether a report
// is due, for a point-to-point launch whose CTAs have been seen waiting in it at every check for
// thresholdNs or more and was not reported yet. *rec is its record; when the board no longer holds
// it (over kRecentP2pLaunches launches since), only its seq, nOps 0 and launchNs when it was first
// seen waiting.
bool p2pReportDue(const ProgressBoard& board, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs, P2pRecord* rec);

// The same for replays of captured launches (p2pGraphWaits): *rec is the capture's record (seq its
// capture number; nOps 0 when no longer held), with launchNs when the replay was first seen waiting.
bool p2pGraphReportDue(const ProgressBoard& board, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs,
                       P2pRecord* rec);

// The report of launch `rec` of rank `self`, stuck for `stuckSeconds` (since its launch, or since it
// was seen waiting when its record is gone). matching[i] is what the peer of rec.ops[i] has posted
// toward self in the matching direction (postedToward), -1 when its board cannot be read (another
// host, or gone).
std::string p2pHangReport(const P2pRecord& rec, double stuckSeconds, int self, const std::vector<int64_t>& matching);

// The report of a replay of capture `rec` of rank `self`, waiting for `stuckSeconds`.
// peerWaiting[r]: the captured launch rank r's replay waits in now (0: none, -1: its board cannot be
// read).
std::string p2pGraphHangReport(const P2pRecord& rec, double stuckSeconds, int self,
                               const std::vector<int64_t>& peerWaiting);

}  // namespace braid::watch
