// Device memory through CUDA's virtual memory management (cuMem): an address range reserved once,
// with physical memory mapped into it. The physical memory can be let go and mapped again at the
// same addresses (ncclCommSuspend / ncclCommResume), so every pointer into the range stays valid:
// in DevComm, in a peer's connection structs, in kernels that CUDA graphs captured. Never a
// multicast object.
//
// Two kinds: memory this process created (owned; exportable to other processes as a POSIX file
// descriptor when asked), and another process's memory mapped here (imported from such a
// descriptor). The physical memory goes away once no process maps it or holds its handle.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <cstddef>
#include <memory>
#include <string>

#include "cuda/cuda_driver.h"
#include "util/log.h"
#include "util/unique_fd.h"

namespace braid {

class VmmMemory {
 public:
  // New physical memory on `cudaDev`, at least `bytes` (rounded up to the allocation granularity),
  // mapped read/write for that device. Failures are logged at `level` (kInfo where the caller falls
  // back to another allocator); `what` leads the messages.
  [[nodiscard]] static ncclResult_t allocate(const CudaDriver* drv, int cudaDev, size_t bytes, bool exportable,
                                             const std::string& what, LogLevel level, std::unique_ptr<VmmMemory>* out);
  // Another process's memory of `bytes` bytes, named by `fd` (consumed), mapped read/write for
  // `cudaDev`.
  [[nodiscard]] static ncclResult_t import(const CudaDriver* drv, int cudaDev, size_t bytes, UniqueFd fd,
                                           const std::string& what, std::unique_ptr<VmmMemory>* out);
  ~VmmMemory();
  VmmMemory(const VmmMemory&) = delete;
  VmmMemory& operator=(const VmmMemory&) = delete;

  char* ptr() const { return reinterpret_cast<char*>(va_); }
  size_t bytes() const { return bytes_; }
  bool owned() const { return owned_; }
  bool exportable() const { return exportable_; }
  bool mapped() const { return mapped_; }

  // A descriptor for the physical memory mapped now (owned and exportable memory only).
  [[nodiscard]] ncclResult_t exportFd(UniqueFd* out) const;

  // Unmaps the physical memory and lets it go (owned: it is freed once no other process maps it;
  // imported: this process's reference goes). The address range stays reserved.
  [[nodiscard]] ncclResult_t unmap();
  // Owned: new physical memory, mapped at the same addresses for the same device. Its contents are
  // undefined.
  [[nodiscard]] ncclResult_t remap();
  // Imported: the owner's new physical memory, named by `fd` (consumed), mapped at the same addresses.
  [[nodiscard]] ncclResult_t remapImported(UniqueFd fd);

 private:
  VmmMemory(const CudaDriver* drv, int cudaDev, std::string what)
      : drv_(drv), cudaDev_(cudaDev), what_(std::move(what)) {}
  [[nodiscard]] ncclResult_t reserve(size_t bytes, size_t alignment, LogLevel level);
  [[nodiscard]] ncclResult_t create(LogLevel level);
  [[nodiscard]] ncclResult_t importHandle(UniqueFd fd);
  [[nodiscard]] ncclResult_t mapHandle(LogLevel level);
  [[nodiscard]] ncclResult_t check(CUresult res, const char* call, LogLevel level) const;

  const CudaDriver* drv_;
  int cudaDev_;
  std::string what_;
  bool owned_ = false;
  bool exportable_ = false;
  CUdeviceptr va_ = 0;
  size_t bytes_ = 0;
  bool reserved_ = false;
  CUmemGenericAllocationHandle handle_ = 0;
  bool hasHandle_ = false;
  bool mapped_ = false;
};

// Gives `cudaDev` read/write access to [ptr, ptr + bytes), memory another device of this process
// mapped through cuMem (a peer rank that is a thread of this process). Access belongs to the
// mapping: after the owner maps the range again (VmmMemory::remap) it must be given again.
[[nodiscard]] ncclResult_t grantVmmAccess(const CudaDriver* drv, void* ptr, size_t bytes, int cudaDev,
                                          const std::string& what);

}  // namespace braid
