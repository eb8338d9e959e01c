// Whether eager one-sided operations that used a window may still be running: one event per
// stream they were enqueued on, recorded after each. Deregistering a window those operations
// still read or write is refused rather than unmapped under them.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <vector>

namespace braid::window {

class UseTracker {
 public:
  UseTracker() = default;
  ~UseTracker();
  UseTracker(const UseTracker&) = delete;
  UseTracker& operator=(const UseTracker&) = delete;
  UseTracker(UseTracker&& other) noexcept : entries_(std::move(other.entries_)) { other.entries_.clear(); }

  // Records that work just enqueued on `stream` uses the window (not while capturing).
  [[nodiscard]] ncclResult_t note(cudaStream_t stream);
  // True while any recorded work has not completed.
  bool pending();
  // Waits at most `timeout` for all of it; true when it has completed.
  bool drain(std::chrono::milliseconds timeout);

 private:
  struct Entry {
    cudaStream_t stream;
    cudaEvent_t event;
  };
  std::vector<Entry> entries_;
};

}  // namespace braid::window
