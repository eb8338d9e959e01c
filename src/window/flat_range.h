// A window's flat address range on one rank: one virtual address reservation with every LSA
// rank's physical allocation mapped into its slot (window/flat_layout.h), read/write for this
// rank's GPU. Unmapping drops this process's references; the physical memory goes once its owner
// and every other mapper have let it go, so a peer that deregisters first never pulls memory out
// from under this rank.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_driver.h"
#include "util/unique_fd.h"

namespace braid::window {

// One reference to a physical allocation (cuMemRelease when it goes).
class AllocHandle {
 public:
  AllocHandle() = default;
  AllocHandle(const CudaDriver* drv, CUmemGenericAllocationHandle handle) : drv_(drv), handle_(handle), held_(true) {}
  ~AllocHandle() { reset(); }
  AllocHandle(AllocHandle&& other) noexcept { *this = std::move(other); }
  AllocHandle& operator=(AllocHandle&& other) noexcept;
  AllocHandle(const AllocHandle&) = delete;
  AllocHandle& operator=(const AllocHandle&) = delete;

  // The allocation mapped at `ptr` in this process (cuMemRetainAllocationHandle). Memory that is not
  // a cuMem mapping (cudaMalloc, host memory) is ncclInvalidArgument, with a WARN led by `what`.
  [[nodiscard]] static ncclResult_t retain(const CudaDriver* drv, const void* ptr, const std::string& what,
                                           AllocHandle* out);
  // Another process's allocation from the POSIX file descriptor it exported (consumed).
  [[nodiscard]] static ncclResult_t import(const CudaDriver* drv, UniqueFd fd, const std::string& what,
                                           AllocHandle* out);
  // A POSIX file descriptor for another process of this host (the allocation must allow it).
  [[nodiscard]] ncclResult_t exportFd(const std::string& what, UniqueFd* out) const;

  bool held() const { return held_; }
  CUmemGenericAllocationHandle get() const { return handle_; }
  void reset();

 private:
  const CudaDriver* drv_ = nullptr;
  CUmemGenericAllocationHandle handle_ = 0;
  bool held_ = false;
};

class FlatRange {
 public:
  // Reserves `bytes` of address space aligned to `alignment`.
  [[nodiscard]] static ncclResult_t reserve(const CudaDriver* drv, uint64_t bytes, uint64_t alignment, int cudaDev,
                                            std::string what, std::unique_ptr<FlatRange>* out);
  ~FlatRange();
  FlatRange(const FlatRange&) = delete;
  FlatRange& operator=(const FlatRange&) = delete;

  char* base() const { return reinterpret_cast<char*>(va_); }
  uint64_t bytes() const { return bytes_; }
  // Maps `bytes` of `handle` (its whole allocation) at base() + offset, read/write for this GPU.
  [[nodiscard]] ncclResult_t map(uint64_t offset, uint64_t bytes, const AllocHandle& handle);

 private:
  FlatRange(const CudaDriver* drv, int cudaDev, std::string what)
      : drv_(drv), cudaDev_(cudaDev), what_(std::move(what)) {}

  struct Mapping {
    uint64_t offset;
    uint64_t bytes;
  };
  const CudaDriver* drv_;
  int cudaDev_;
  std::string what_;
  CUdeviceptr va_ = 0;
  uint64_t bytes_ = 0;
  std::vector<Mapping> mappings_;
};

}  // namespace braid::window
