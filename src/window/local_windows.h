// This rank's windows as the network thread sees them (net_backend.h, gin_service.h): registration
// serial -> the window's description, entered by the thread that registers and read by the network
// thread, which may get a peer's message for a window a moment before its entry is made.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "window/window.h"

namespace braid::window {

class LocalWindows {
 public:
  explicit LocalWindows(int rank) : rank_(rank) {}
  void add(uint64_t serial, std::shared_ptr<const WindowInfo> info);
  void remove(uint64_t serial);
  std::shared_ptr<const WindowInfo> find(uint64_t serial) const;
  // find, waiting up to 10 s for a registration that is being entered (the window is registered
  // here before the sender's registration returns, but entered just after). Null, with a WARN that
  // names `what` from `peer`, when none comes or `stop` is raised.
  std::shared_ptr<const WindowInfo> await(int peer, uint64_t serial, const std::atomic<bool>& stop,
                                          const char* what) const;
  // `bytes` at `offset` of window `serial` in LSA rank `lsa`'s copy (this rank's own included),
  // checked against that rank's size: ncclInvalidUsage with a WARN naming `what` otherwise.
  [[nodiscard]] ncclResult_t lsaRange(uint64_t serial, uint64_t offset, uint64_t bytes, int lsa, const char* what,
                                      char** out) const;

 private:
  const int rank_;
  mutable std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<const WindowInfo>> windows_;
};

}  // namespace braid::window
