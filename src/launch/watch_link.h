// The data path's link to its communicator's watch (watch/comm_watch.h). It lends the watch what the
// watch reads of the data path (the event the latest launch records; the host-mapped word the
// kernels poll for abort, which only the abort flag writes) and takes them back when the data path
// goes; and it tells hang diagnosis about each launch, in the watch's terms (an OpRecord, the
// sends and receives posted), so that the watch knows nothing of launch's tasks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "device/dev_types.h"
#include "launch/coll_task.h"
#include "launch/p2p_task.h"
#include "watch/comm_watch.h"

namespace braid {

class WatchLink {
 public:
  WatchLink() = default;
  ~WatchLink();  // takes back what it lent
  WatchLink(const WatchLink&) = delete;
  WatchLink& operator=(const WatchLink&) = delete;

  // At the data path's creation, on the communicator's GPU: lends `latestLaunch` and, for a
  // communicator of more than one rank (`board`), opens this rank's progress board.
  void attach(watch::CommWatch* watch, cudaEvent_t latestLaunch, bool board);
  // Once the kernels' abort word exists (launch/device_state.h): the abort flag writes it.
  void lendAbortWord(int* hostMapped);

  // A collective kernel of nChannels CTAs is about to be launched eagerly, or captured: notes it on
  // the progress board and points `work` at the board's long-wait notes (watch/progress_recorder.h).
  void noteLaunch(const CollTask& task, int nChannels, DevWork* work);
  void noteCapture(const CollTask& task, int nChannels, DevWork* work);
  // The same for a point-to-point kernel of nCtas CTAs moving `tasks`: *seq and *waitNotes for its
  // parameters (0 and null without a board).
  void noteP2pLaunch(const std::vector<P2pTask>& tasks, int nCtas, uint64_t* seq, DevWaitNotes** waitNotes);
  void noteP2pCapture(const std::vector<P2pTask>& tasks, int nCtas, uint64_t* capture, DevWaitNotes** waitNotes);
  // The communicator's last-launch event was just recorded after the latest eager collective.
  void noteRecorded();

 private:
  // The watch's progress recorder when it has a board (null otherwise: nothing is noted).
  watch::ProgressRecorder* recorder() const;
  const std::vector<watch::P2pOpPosted>& postedOps(const std::vector<P2pTask>& tasks);  // in p2pOps_

  watch::CommWatch* watch_ = nullptr;
  bool lentAbortWord_ = false;
  std::vector<watch::P2pOpPosted> p2pOps_;  // scratch of the point-to-point notes
};

}  // namespace braid
