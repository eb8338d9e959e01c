#include "window/local_windows.h"

#include <chrono>
#include <thread>

#include "util/log.h"
#include "window/gin_wire.h"

namespace braid::window {

void LocalWindows::add(uint64_t serial, std::shared_ptr<const WindowInfo> info) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_[serial] = std::move(info);
}

void LocalWindows::remove(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_.erase(serial);
}

std::shared_ptr<const WindowInfo> LocalWindows::find(uint64_t serial) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = windows_.find(serial);
  return it == windows_.end() ? nullptr : it->second;
}

std::shared_ptr<const WindowInfo> LocalWindows::await(int peer, uint64_t serial, const std::atomic<bool>& stop,
                                                      const char* what) const {
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::shared_ptr<const WindowInfo> w;
  while ((w = find(serial)) == nullptr) {
    if (std::chrono::steady_clock::now() > giveUp || stop.load()) {
      WARN("rank %d: %s from rank %d into window %llu, which this rank does not have (deregistered?); dropped", rank_,
           what, peer, static_cast<unsigned long long>(serial));
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return w;
}

ncclResult_t LocalWindows::lsaRange(uint64_t serial, uint64_t offset, uint64_t bytes, int lsa, const char* what,
                                    char** out) const {
  std::shared_ptr<const WindowInfo> w = find(serial);
  const int world = w == nullptr ? 0 : w->lsaBase() + lsa;
  if (w == nullptr || !ginFits(offset, bytes, w->worldBytes[world])) {
    WARN("rank %d: GIN: %s: %llu bytes at offset %llu of window %llu on rank %d, which %s", rank_, what,
         static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(offset),
         static_cast<unsigned long long>(serial), world,
         w == nullptr ? "this communicator does not have (deregistered?)" : "run past its end");
    return ncclInvalidUsage;
  }
  *out = w->lsaPtr(lsa, offset);
  return ncclSuccess;
}

}  // namespace braid::window
