// How one-sided operations reach a peer. The copy-engine backend (ce_backend.h) serves the peers
// of this rank's LSA team, whose memory is mapped here, and every wait; puts to peers on other
// hosts go through the network (net_backend.h), whose receiver writes the same signal words.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

namespace braid::window {

// One put (bytes may be 0: a signal alone) to `peer`, then one signal on (ctx, sig).
struct PutOp {
  const void* src = nullptr;
  char* dst = nullptr;  // the peer's window byte, in this rank's address space (null when bytes is 0)
  uint64_t bytes = 0;
  int peer = 0;
  int ctx = 0;
  int sig = 0;
};

// Wait for `count` more signals from `peer` on (ctx, sig).
struct WaitOp {
  int peer = 0;
  int ctx = 0;
  int sig = 0;
  int count = 0;
};

class RmaBackend {
 public:
  virtual ~RmaBackend() = default;
  virtual bool reaches(int peer) const = 0;
  // Enqueues on `stream`; `graph`: the stream is being captured (the operation must be replayable).
  [[nodiscard]] virtual ncclResult_t put(const PutOp& op, bool graph, cudaStream_t stream) = 0;
  [[nodiscard]] virtual ncclResult_t wait(const std::vector<WaitOp>& waits, bool graph, cudaStream_t stream) = 0;
  // Teardown with operations possibly still waiting on the GPU: satisfies every wait this rank's
  // streams may be blocked on (their signals will never come), so that they drain.
  virtual void releaseWaits() = 0;
};

}  // namespace braid::window
