// This rank's progress board of one communicator (core/progress_board.h): the shared memory
// segment, its mapping for the kernels, and the numbering of collective launches. Hang diagnosis
// (core/hang_watch.h) reads it; nothing else depends on it, so a board that cannot be made (a full
// /dev/shm) costs the diagnosis only, with one INFO line, never an operation.
#pragma once

#include <cstdint>

#include "core/progress_board.h"
#include "device/dev_types.h"
#include "launch/coll_task.h"
#include "util/shm_segment.h"

namespace braid {

class ProgressRecorder {
 public:
  ProgressRecorder() = default;
  ~ProgressRecorder();
  ProgressRecorder(const ProgressRecorder&) = delete;
  ProgressRecorder& operator=(const ProgressRecorder&) = delete;

  // Creates the board (current device: the communicator's). Without one, launches are not counted.
  void init(uint64_t commHash, int rank);
  // A collective kernel of nChannels CTAs is about to be launched eagerly: numbers it, notes it on
  // the board, and points `work` at the board. Does nothing without a board.
  void noteLaunch(const CollTask& task, int nChannels, DevWork* work);
  ProgressBoard* board() const { return board_; }

 private:
  ShmSegment segment_;
  bool registered_ = false;         // segment_ is registered with CUDA
  ProgressBoard* board_ = nullptr;  // in segment_, once it is usable
  DevProgress* devProgress_ = nullptr;
  uint64_t seq_ = 0;
};

}  // namespace braid
