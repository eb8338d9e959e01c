#include "window/window_set.h"

#include <algorithm>

#include "util/check.h"

namespace braid::window {

WindowSet::~WindowSet() { graphReleases_->close(); }

Window* WindowSet::add(std::unique_ptr<Window> w) {
  windows_.push_back(std::move(w));
  return windows_.back().get();
}

Window* WindowSet::find(ncclWindow_t handle) const {
  for (const auto& w : windows_) {
    if (!w->deregistered && w->info->handle == handle) return w.get();
  }
  return nullptr;
}

Window* WindowSet::holding(const void* ptr, uint64_t bytes) const {
  Window* any = nullptr;
  for (const auto& w : windows_) {
    if (w->deregistered || !w->info->holds(ptr, bytes)) continue;
    if ((w->info->winFlags & kWinCollSymmetric) != 0) return w.get();
    any = w.get();
  }
  return any;
}

ncclResult_t WindowSet::noteUse(Window* w, bool graph, cudaStream_t stream) {
  if (!graph) return w->uses.note(stream);
  NCCLCHECK(reg::holdForCapturedGraph(stream, graphReleases_, w->serial));
  ++w->graphRefs;
  return ncclSuccess;
}

std::vector<Window*> WindowSet::takeReleased() {
  std::vector<Window*> released;
  for (uint64_t serial : graphReleases_->take()) {
    for (const auto& w : windows_) {
      if (w->serial != serial) continue;
      if (--w->graphRefs == 0 && w->deregistered) released.push_back(w.get());
      break;
    }
  }
  return released;
}

void WindowSet::erase(Window* w) {
  auto it = std::find_if(windows_.begin(), windows_.end(), [w](const auto& p) { return p.get() == w; });
  if (it != windows_.end()) windows_.erase(it);
}

void WindowSet::clear() { windows_.clear(); }

}  // namespace braid::window
