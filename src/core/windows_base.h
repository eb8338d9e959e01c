// The symmetric memory windows of a communicator as core sees them: an object that window/
// implements (window::Manager) and the communicator owns, created at the first
// ncclCommWindowRegister. core only tears it down, so core never depends on window/.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>

namespace braid {

// Where every rank's copy of a buffer in a symmetric window is in this process: rank q's at
// rank0 + q * stride.
struct SymmetricCopies {
  char* rank0 = nullptr;
  uint64_t stride = 0;
};

class CommWindowsBase {
 public:
  virtual ~CommWindowsBase() = default;
  // Destroy (abort false) or abort (true): one-sided operations still pending on the GPU are
  // waited for, or cut short (destroy cuts them short too once `peerFailed` says a peer is gone),
  // so that no stream still reads or writes the memory that is unmapped next. Never waits for a
  // peer. Called once, before the data path and the bootstrap go.
  virtual void release(bool abort, bool peerFailed) = 0;
  // Whether [ptr, ptr + bytes) lies in a window registered with NCCL_WIN_COLL_SYMMETRIC that every
  // rank of the communicator maps (its LSA team is the whole communicator) and whose copy on every
  // rank holds that range; if so, where those copies are. The collectives' symmetric kernels
  // (device/coll/symmetric_colls.h) load and store them.
  virtual bool symmetricCopies(const void* ptr, uint64_t bytes, SymmetricCopies* out) const = 0;
  // A collective just enqueued on `stream` (captured: into a graph) uses the window that holds ptr:
  // deregistering it while that runs is refused, and a graph keeps it mapped.
  [[nodiscard]] virtual ncclResult_t noteCollectiveUse(const void* ptr, bool graph, cudaStream_t stream) = 0;
};

}  // namespace braid
