// Eager launches of a communicator that may use the network: how many the data path has issued
// and how many of those a thread that can ask CUDA (the peer watch, watch/peer_watch.h) has seen
// complete. The proxy reads both: while they differ a kernel may still start and publish steps, so
// it keeps its sleeps short; once they agree nothing of ours can need it before the next launch,
// whose kick wakes it, and it may sleep long (proxy/proxy.h, "Idle").
#pragma once

#include <atomic>
#include <cstdint>

namespace braid {

struct LaunchCounts {
  // Bumped by the launching thread after the launches and their events are recorded, so that a
  // watcher that reads `issued` and then finds the latest event complete has seen them all end.
  std::atomic<uint64_t> issued{0};
  // Written by the watcher alone: `issued` as it read it before an event query that said done.
  std::atomic<uint64_t> completed{0};

  bool pending() const { return completed.load(std::memory_order_acquire) != issued.load(std::memory_order_acquire); }
};

}  // namespace braid
