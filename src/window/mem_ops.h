// Stream memory operations (cuStreamBatchMemOp) gathered and enqueued in batches: 64-bit writes
// and waits on this rank's own memory. Peer memory is never their target: the copy engine writes
// it (cudaMemcpyAsync).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "cuda/cuda_driver.h"

namespace braid::window {

class MemOps {
 public:
  explicit MemOps(const CudaDriver* drv) : drv_(drv) {}
  // Waits until (int64_t)(*addr - value) >= 0.
  void waitGeq(const void* addr, uint64_t value);
  // Writes value, after a fence over the stream's earlier writes.
  void write(void* addr, uint64_t value);
  bool empty() const { return ops_.empty(); }
  // Enqueues what was gathered on `stream` (in batches the driver accepts) and empties the list.
  [[nodiscard]] ncclResult_t enqueue(cudaStream_t stream);

 private:
  const CudaDriver* drv_;
  std::vector<CUstreamBatchMemOpParams> ops_;
};

}  // namespace braid::window
