// This rank's signal memory (pad_layout.h): cuMem device memory, exportable to the peer processes
// of its host, zeroed before any peer can map it, and registered like a window so that every LSA
// peer reaches it through its flat range.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "cuda/vmm_memory.h"
#include "window/pad_layout.h"
#include "window/window.h"

namespace braid::window {

class SignalPad {
 public:
  // Allocates and initialises the pad through `stream` (waited for).
  [[nodiscard]] static ncclResult_t create(const CudaDriver* drv, int cudaDev, const PadLayout& layout, bool exportable,
                                           cudaStream_t stream, std::unique_ptr<SignalPad>* out);
  const PadLayout& layout() const { return layout_; }
  char* local() const { return memory_->ptr(); }
  uint64_t bytes() const { return layout_.bytes(); }
  // The pad's window, once registered: peers' pads in this rank's address space.
  void attach(std::shared_ptr<const WindowInfo> window) { window_ = std::move(window); }
  const std::shared_ptr<const WindowInfo>& window() const { return window_; }
  char* peer(int lsaRank, uint64_t offset) const { return window_->lsaPtr(lsaRank, offset); }

 private:
  SignalPad(const PadLayout& layout, std::unique_ptr<VmmMemory> memory) : layout_(layout), memory_(std::move(memory)) {}
  PadLayout layout_;
  std::unique_ptr<VmmMemory> memory_;
  std::shared_ptr<const WindowInfo> window_;
};

}  // namespace braid::window
