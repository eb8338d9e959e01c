// One-sided operations between the ranks of one LSA team, on the copy engines.
//
// Eager (the stream is not being captured), no kernel at all:
//   put     copy the data into the peer's window (mapped here); write the next count for
//           (peer, ctx, sig) into this rank's stage word (a stream memory operation, which fences
//           the stream's earlier writes); copy that word into the peer's counts word. The peer's
//           word only grows, and it holds n once this rank's first n signals and their data have
//           landed (the copies of one stream complete in order).
//   wait    add opCnt to the count this rank expects from (peer, ctx, sig) and wait (a stream
//           memory operation) until its counts word reaches it.
// In a CUDA graph no count can be baked in, so the graph words count what is outstanding:
//   put     copy the data; a one-thread kernel fences and atomically adds 1 to the peer's graph
//           count word (device/signal_add.h);
//   wait    wait until the graph count word reaches opCnt, then subtract opCnt (the same kernel).
//           Every replay leaves the words as it found them, and puts never wait for anything.
// A signal sent eagerly is received by an eager wait, one sent from a graph by a wait in a graph.
// Graph mode adds to peers' words with atomics: it needs native atomics between the GPUs (NVLink).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "window/mem_ops.h"
#include "window/rma_backend.h"
#include "window/signal_pad.h"
#include "window/window_context.h"

namespace braid::window {

class CeBackend final : public RmaBackend {
 public:
  CeBackend(const CudaDriver* drv, const WindowContext& ctx, const SignalPad& pad);
  bool reaches(int peer) const override { return ctx_.inLsa(peer); }
  [[nodiscard]] ncclResult_t put(const PutOp& op, bool graph, cudaStream_t stream) override;
  [[nodiscard]] ncclResult_t wait(const std::vector<WaitOp>& waits, bool graph, cudaStream_t stream) override;
  void releaseWaits() override;

 private:
  [[nodiscard]] ncclResult_t putEager(const PutOp& op, cudaStream_t stream);
  [[nodiscard]] ncclResult_t putGraph(const PutOp& op, cudaStream_t stream);
  [[nodiscard]] ncclResult_t waitEager(const std::vector<WaitOp>& waits, cudaStream_t stream);
  [[nodiscard]] ncclResult_t waitGraph(const std::vector<WaitOp>& waits, cudaStream_t stream);
  [[nodiscard]] ncclResult_t checkGraph() const;
  [[nodiscard]] ncclResult_t copy(void* dst, const void* src, uint64_t bytes, cudaStream_t stream) const;
  char* local(uint64_t offset) const { return pad_.local() + offset; }

  const CudaDriver* drv_;
  const WindowContext& ctx_;
  const SignalPad& pad_;
  std::string noGraph_;           // why graph mode cannot run here (empty: it can)
  std::mutex mutex_;              // the host counts (one thread per communicator is NCCL's rule; cheap anyway)
  std::vector<uint64_t> sent_;    // per (ctx, sig, peer): signals sent eagerly
  std::vector<uint64_t> expect_;  // per (ctx, sig, peer): signals waited for eagerly
};

}  // namespace braid::window
