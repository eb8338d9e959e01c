// The windows one communicator registered, and what keeps each mapped: eager operations that may
// still use it (its UseTracker) and the captured graphs that use it (each holds it until the graph
// is destroyed).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "register/graph_hold.h"
#include "window/window.h"

namespace braid::window {

class WindowSet {
 public:
  WindowSet() = default;
  ~WindowSet();
  WindowSet(const WindowSet&) = delete;
  WindowSet& operator=(const WindowSet&) = delete;

  Window* add(std::unique_ptr<Window> w);
  // The live (not deregistered) window of `handle`; null if none.
  Window* find(ncclWindow_t handle) const;
  // A live window whose own part holds [ptr, +bytes); one registered with NCCL_WIN_COLL_SYMMETRIC
  // wins where several do. Null if none.
  Window* holding(const void* ptr, uint64_t bytes) const;
  // A use of w by an operation on `stream`: an eager one is tracked, a captured one holds w for its
  // graph's life.
  [[nodiscard]] ncclResult_t noteUse(Window* w, bool graph, cudaStream_t stream);
  // The deregistered windows whose last graph was destroyed since the last call: to be destroyed.
  std::vector<Window*> takeReleased();
  void erase(Window* w);  // unmaps its flat range
  void clear();           // unmaps every flat range
  const std::vector<std::unique_ptr<Window>>& all() const { return windows_; }

 private:
  std::vector<std::unique_ptr<Window>> windows_;
  std::shared_ptr<reg::ReleaseBox> graphReleases_ = std::make_shared<reg::ReleaseBox>();
};

}  // namespace braid::window
