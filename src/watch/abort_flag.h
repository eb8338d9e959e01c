// A communicator's abort flag: the one word that says what of the communicator has been told to
// stop, written only through raise(). Two things stop, each on its own:
//   - kAbortHostWaits: every host wait of the communicator (bootstrap, connection setup, resuming
//     suspended memory) gives up within one poll slice. They poll the word itself (hostWord(), the
//     bit util/socket.h's Deadline tests).
//   - kAbortKernels: its kernels leave their wait loops. A kernel reads only memory mapped for it, so
//     the data path lends the host-mapped word its kernels poll (launch/device_state.h) and raise()
//     writes that word as well: a mirror of this bit, never written elsewhere. A word lent after the
//     bit was raised starts raised.
// ncclCommAbort raises both; ncclCommRevoke and ncclCommShrink with NCCL_SHRINK_ABORT only the
// kernels' (the bootstrap stays up for the shrink); a cancelled creation or connect only the host's
// (kernels launched before finish what they began); destroy the host's, and the kernels' when it
// cannot wait for them.
#pragma once

#include <atomic>
#include <mutex>

#include "util/socket.h"

namespace braid::watch {

enum AbortScope : int {
  kAbortHostWaits = braid::kAbortHostWaits,
  kAbortKernels = 2,
  kAbortAll = kAbortHostWaits | kAbortKernels,
};

class AbortFlag {
 public:
  AbortFlag() = default;
  AbortFlag(const AbortFlag&) = delete;
  AbortFlag& operator=(const AbortFlag&) = delete;

  // Raises the bits of `scope` (AbortScope); raising one again changes nothing. Any thread.
  void raise(int scope);
  // Whether every bit of `scope` is raised.
  bool raised(int scope) const { return (word_.load(std::memory_order_acquire) & scope) == scope; }
  // What host waits poll (Deadline, Bootstrap::create, the transports' contexts).
  const std::atomic<int>* hostWord() const { return &word_; }

  // The host side of the word the kernels poll, in host-mapped memory that stays valid until it is
  // taken back (null); written 1 at once if kAbortKernels is raised already.
  void lendKernelWord(int* word);

 private:
  std::atomic<int> word_{0};
  std::mutex kernelWordMutex_;  // a raise() on another thread never writes a word being taken back
  int* kernelWord_ = nullptr;
};

}  // namespace braid::watch
