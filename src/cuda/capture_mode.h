// Lets this thread make "potentially unsafe" CUDA calls (cudaMalloc, cudaHostAlloc, IPC and cuMem
// mappings) while a stream capture is in progress, for a scope, and restores the thread's mode
// afterwards. A communicator connects lazily, at its first operation on a peer, and that operation
// may be the one being captured, in cudaStreamCaptureModeGlobal too, and possibly on a helper thread
// of ncclGroupEnd while the user's thread captures. Nothing inside such a scope may touch the legacy
// default stream (it would join the capture): use a private non-blocking stream instead.
#pragma once

#include <cuda_runtime.h>

namespace braid {

class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { ok_ = cudaThreadExchangeStreamCaptureMode(&previous_) == cudaSuccess; }
  ~RelaxedCaptureMode() {
    if (ok_) (void)cudaThreadExchangeStreamCaptureMode(&previous_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
  bool ok_ = false;
};

// Whether `stream` is being captured into a graph now (false if CUDA cannot tell).
inline bool streamCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
}

}  // namespace braid
