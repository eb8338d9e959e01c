#include "window/struct_pool.h"

#include "cuda/cuda_check.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::window {

StructPool::~StructPool() {
  for (WindowVidmem* slab : slabs_) {
    cudaError_t err = cudaFree(slab);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      INFO(kLogAlloc, "window struct pool: cudaFree failed: %s", cudaGetErrorString(err));
    }
  }
}

ncclResult_t StructPool::take(WindowVidmem** out) {
  if (free_.empty()) {
    void* slab = nullptr;
    CUDACHECK(cudaMalloc(&slab, sizeof(WindowVidmem) * kSlotsPerSlab));
    slabs_.push_back(static_cast<WindowVidmem*>(slab));
    for (int i = kSlotsPerSlab - 1; i >= 0; --i) free_.push_back(static_cast<WindowVidmem*>(slab) + i);
  }
  *out = free_.back();
  free_.pop_back();
  return ncclSuccess;
}

void StructPool::give(WindowVidmem* slot) {
  if (slot != nullptr) free_.push_back(slot);
}

ncclResult_t StructPool::write(WindowVidmem* slot, const WindowVidmem& value, cudaStream_t stream) {
  CUDACHECK(cudaMemcpyAsync(slot, &value, sizeof(value), cudaMemcpyHostToDevice, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  return ncclSuccess;
}

}  // namespace braid::window
