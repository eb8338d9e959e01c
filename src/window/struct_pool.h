// Device memory for the window structs that ncclWindow_t handles point to: slabs of slots, taken
// and given back as windows come and go, so that registering and deregistering windows in a loop
// allocates no device memory after the first slab. The slabs go with the pool.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "window/window_types.h"

namespace braid::window {

class StructPool {
 public:
  StructPool() = default;
  ~StructPool();
  StructPool(const StructPool&) = delete;
  StructPool& operator=(const StructPool&) = delete;

  // A free slot (a new slab when none is left). The current device must be the pool's.
  [[nodiscard]] ncclResult_t take(WindowVidmem** out);
  void give(WindowVidmem* slot);
  // Writes `value` to `slot` through `stream` and waits for it.
  [[nodiscard]] static ncclResult_t write(WindowVidmem* slot, const WindowVidmem& value, cudaStream_t stream);

 private:
  static constexpr int kSlotsPerSlab = 128;
  std::vector<WindowVidmem*> slabs_;
  std::vector<WindowVidmem*> free_;
};

}  // namespace braid::window
