// One registered window on this rank: what lookups need (WindowInfo, immutable once registered
// and shared with the process-wide registry, window_registry.h) and what the owner keeps (the
// flat mapping, the device struct, the uses still pending on the GPU).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/vmm_memory.h"
#include "window/flat_range.h"
#include "window/use_tracker.h"
#include "window/window_types.h"

namespace braid::window {

// What a window holds: a program's buffer, the library's signal memory for one-sided operations
// (no device struct: device code never names it), or a device communicator's resource buffers
// (memory the library allocated, released by ncclDevCommDestroy).
enum class WindowRole : int32_t { kUser = 0, kSignals = 1, kDevResources = 2 };

struct WindowInfo {
  ncclWindow_t handle = nullptr;
  char* userPtr = nullptr;
  uint64_t userBytes = 0;
  int winFlags = 0;
  WindowRole role = WindowRole::kUser;
  int worldRank = 0;
  int nranks = 0;
  int lsaRank = 0;
  int lsaSize = 1;
  char* lsaFlatBase = nullptr;  // LSA rank 0's copy of byte 0
  uint64_t stride = 0;
  std::vector<uint64_t> worldBytes;  // the window's size on every rank

  int lsaBase() const { return worldRank - lsaRank; }
  bool inLsa(int world) const { return world >= lsaBase() && world < lsaBase() + lsaSize; }
  // LSA rank `lsa`'s byte `offset` in this rank's address space.
  char* lsaPtr(int lsa, uint64_t offset) const { return lsaFlatBase + static_cast<uint64_t>(lsa) * stride + offset; }
  // Whether [ptr, ptr + bytes) lies in this rank's own part (its user buffer).
  bool holds(const void* ptr, uint64_t bytes) const {
    const char* p = static_cast<const char*>(ptr);
    return p >= userPtr && p <= userPtr + userBytes && bytes <= static_cast<uint64_t>(userPtr + userBytes - p);
  }
};

struct Window {
  std::unique_ptr<VmmMemory> ownMemory;  // the library's memory behind a kDevResources window
  std::shared_ptr<const WindowInfo> info;
  uint64_t serial = 0;
  std::unique_ptr<FlatRange> flat;
  WindowVidmem* slot = nullptr;  // device struct (the handle); given back to the pool when the window goes
  WindowVidmem desc{};           // what the device struct holds
  UseTracker uses;               // eager one-sided operations that may still use it
  int graphRefs = 0;             // captured graphs that use it (released when they are destroyed)
  bool deregistered = false;     // kept only for graphRefs
};

}  // namespace braid::window
