// Makes a GPU current for a scope and restores the caller's device afterwards: the data path runs
// on whatever thread called it (several GPUs per thread are allowed inside a group).
#pragma once

#include <cuda_runtime.h>

namespace braid {

class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) ok_ = cudaSetDevice(device) == cudaSuccess;
  }
  ~ScopedDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = true;
};

}  // namespace braid
