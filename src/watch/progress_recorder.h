// This rank's progress board of one communicator (progress_board.h): the shared memory segment,
// its mapping for the kernels, and the numbering of collective launches. Hang diagnosis
// (hang_watch.h) reads it; nothing else depends on it, so a board that cannot be made (a full
// /dev/shm) costs the diagnosis only, with one INFO line, never an operation. The owner is the
// communicator's watch (comm_watch.h); the data path notes its launches here (launch/watch_link.h),
// on the launching thread, without a lock: only that thread writes the board's host side.
#pragma once

#include <cstdint>
#include <vector>

#include "device/dev_types.h"
#include "util/shm_segment.h"
#include "watch/p2p_progress.h"
#include "watch/progress_board.h"

namespace braid::watch {

class ProgressRecorder {
 public:
  ProgressRecorder() = default;
  ~ProgressRecorder();
  ProgressRecorder(const ProgressRecorder&) = delete;
  ProgressRecorder& operator=(const ProgressRecorder&) = delete;

  // Creates the board (current device: the communicator's). Without one, launches are not counted.
  void init(uint64_t commHash, int rank, int nRanks);
  // A collective kernel described by `op` (its seq is set here) is about to be launched eagerly:
  // numbers it, notes it on the board, and points `work` at the board's eager side, where it notes
  // its long waits (wait_notes.h). Does nothing without a board.
  void noteLaunch(OpRecord op, DevWork* work);
  // The same for a collective kernel being captured in a CUDA graph: notes the capture and points
  // `work` at the board's graph side, where a replay of it notes its long waits
  // (graph_progress.h).
  void noteCapture(const OpRecord& op, DevWork* work);
  // The same for a point-to-point kernel of nCtas CTAs moving `ops` (p2p_progress.h): sets *seq and
  // *waitNotes (the board's p2pWaits) for the kernel's parameters (0 and null without a board).
  void noteP2pLaunch(const std::vector<P2pOpPosted>& ops, int nCtas, uint64_t* seq, DevWaitNotes** waitNotes);
  // The same for a point-to-point kernel being captured in a CUDA graph: numbers and notes the
  // capture, and points its replays' long-wait notes at the board's p2pGraphWaits.
  void noteP2pCapture(const std::vector<P2pOpPosted>& ops, int nCtas, uint64_t* capture, DevWaitNotes** waitNotes);
  // The communicator's last-launch event was just recorded after the latest eager
  // collective: lets the watch learn when it has completed (progress_board.h, `completed`).
  void noteRecorded() {
    if (board_ != nullptr) watch::noteRecorded(board_, seq_);
  }
  ProgressBoard* board() const { return board_; }

 private:
  ShmSegment segment_;
  bool registered_ = false;                   // segment_ is registered with CUDA
  ProgressBoard* board_ = nullptr;            // in segment_, once it is usable
  DevWaitNotes* devEagerWaits_ = nullptr;     // the board's eagerWaits, as the GPU sees it
  DevWaitNotes* devP2pWaits_ = nullptr;       // its p2pWaits
  DevWaitNotes* devGraphWaits_ = nullptr;     // its graphWaits
  DevWaitNotes* devP2pGraphWaits_ = nullptr;  // its p2pGraphWaits
  uint64_t seq_ = 0;
};

}  // namespace braid::watch
