#include "window/use_tracker.h"

#include <thread>

#include "cuda/cuda_check.h"
#include "util/check.h"

namespace braid::window {

UseTracker::~UseTracker() {
  for (const Entry& e : entries_) (void)cudaEventDestroy(e.event);
}

ncclResult_t UseTracker::note(cudaStream_t stream) {
  for (const Entry& e : entries_) {
    if (e.stream == stream) {
      CUDACHECK(cudaEventRecord(e.event, stream));
      return ncclSuccess;
    }
  }
  (void)pending();  // a new stream: first let go of the entries whose work is done
  Entry e{stream, nullptr};
  CUDACHECK(cudaEventCreateWithFlags(&e.event, cudaEventDisableTiming));
  cudaError_t err = cudaEventRecord(e.event, stream);
  if (err != cudaSuccess) (void)cudaEventDestroy(e.event);
  CUDACHECK(err);
  entries_.push_back(e);
  return ncclSuccess;
}

bool UseTracker::pending() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const cudaError_t state = cudaEventQuery(it->event);
    if (state == cudaErrorNotReady) {
      ++it;
      continue;
    }
    if (state != cudaSuccess) (void)cudaGetLastError();  // a sticky error shows up on the next call anyway
    (void)cudaEventDestroy(it->event);
    it = entries_.erase(it);
  }
  return !entries_.empty();
}

bool UseTracker::drain(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (pending()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace braid::window
