// When the proxy thread polls its FIFOs and when it sleeps, and what wakes it (proxy.h, "Idle").
//
// The thread calls afterPass() after each pass over its FIFOs: it returns at once after a pass
// that moved data or saw a kick, spins for BRAID_PROXY_SPIN_US after the last progress, and then
// sleeps, 20 us at first and doubling up to the bound that longestSleepUs() gives. A sleep is a
// ppoll() on an eventfd (kick() while the thread sleeps, wake() always) and, until a wake by data
// moved no step, on the epoll set of the sockets the thread progresses (net/ready_scan.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "util/launch_counts.h"

namespace braid::proxy {

class ProxyPacer {
 public:
  // `name` leads the WARN of a failed eventfd; `launches` as Proxy's.
  ProxyPacer(const std::string& name, const LaunchCounts* launches);
  ~ProxyPacer();
  ProxyPacer(const ProxyPacer&) = delete;
  ProxyPacer& operator=(const ProxyPacer&) = delete;

  // Any thread. kick: a launch that uses the network is coming (a system call only while the thread
  // sleeps); wake: ends the thread's sleep now (a change is waiting for it).
  void kick();
  void wake();

  // The thread, after a pass over its FIFOs (`moved`: it moved a step). `changes` set ends a sleep
  // before it starts.
  void afterPass(bool moved, const std::atomic<bool>& changes);

 private:
  using Clock = std::chrono::steady_clock;

  int longestSleepUs(Clock::time_point now) const;
  // One sleep of at most sleepUs_; true when the sockets woke it.
  bool sleepUntilWoken(const std::atomic<bool>& changes);

  // Settings (parameters read at creation).
  const LaunchCounts* launches_;
  int64_t spinUs_;
  int maxSleepUs_;
  std::chrono::microseconds launchWindow_;
  // Shared with the other threads.
  int wakeFd_ = -1;
  std::atomic<bool> sleeping_{false};
  std::atomic<uint64_t> kicks_{0};
  // The thread's, written on every pass: on a cache line of their own, away from the kicks that
  // launching threads touch.
  alignas(64) Clock::time_point lastProgress_;
  Clock::time_point lastKick_;
  uint64_t seenKicks_ = 0;
  int sleepUs_;
  bool watchSockets_ = true;
};

}  // namespace braid::proxy
