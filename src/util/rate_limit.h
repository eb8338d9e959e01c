// At most one event per cause per interval: keeps a listener that hostile peers keep busy from
// flooding the log with the same WARN. Not thread safe: one per listener, used by its thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

namespace braid {

class RateLimit {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kCauses = 8;
  static constexpr std::chrono::seconds kDefaultInterval{10};

  explicit RateLimit(std::chrono::milliseconds interval = kDefaultInterval) : interval_(interval) {}

  // True the first time `cause` (0..kCauses-1) happens and again once `interval` has passed since
  // the last time it returned true; counts what it suppressed meanwhile.
  bool allow(size_t cause) {
    Slot& slot = slots_[cause % kCauses];
    const Clock::time_point now = Clock::now();
    if (slot.seen && now - slot.last < interval_) {
      ++slot.suppressed;
      return false;
    }
    slot.seen = true;
    slot.last = now;
    lastSuppressed_ = slot.suppressed;
    slot.suppressed = 0;
    return true;
  }
  // Occurrences of the cause allow() just let through that were suppressed before it.
  size_t suppressedBefore() const { return lastSuppressed_; }

 private:
  struct Slot {
    bool seen = false;
    Clock::time_point last{};
    size_t suppressed = 0;
  };
  std::chrono::milliseconds interval_;
  std::array<Slot, kCauses> slots_{};
  size_t lastSuppressed_ = 0;
};

}  // namespace braid
