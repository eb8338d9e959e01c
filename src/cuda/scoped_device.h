// Makes a GPU current for a scope and restores the caller's device afterwards: the data path runs
// on whatever thread called it (several GPUs per thread are allowed inside a group). A thread with
// no current context yet (a group's worker thread) gets nothing restored: setting its default
// device 0 back would create a context on GPU 0 (cudaSetDevice makes the primary context since
// CUDA 12), in a process that may never use GPU 0.
#pragma once

#include <cuda_runtime.h>

#include "cuda/cuda_driver.h"

namespace braid {

class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (!threadHasContext() || cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) ok_ = cudaSetDevice(device) == cudaSuccess;
  }
  ~ScopedDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  bool ok() const { return ok_; }

 private:
  // Unknown (no driver table) counts as yes: the caller's device is then restored as before.
  static bool threadHasContext() {
    const CudaDriver* drv = nullptr;
    if (cudaDriver(&drv) != ncclSuccess) return true;
    CUcontext ctx = nullptr;
    return drv->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx != nullptr;
  }

  int previous_ = -1;
  bool ok_ = true;
};

}  // namespace braid
