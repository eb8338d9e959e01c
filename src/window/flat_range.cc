#include "window/flat_range.h"

#include <cstdint>
#include <utility>

#include "util/check.h"
#include "util/log.h"

namespace braid::window {
namespace {

const char* errorText(const CudaDriver* drv, CUresult res) {
  const char* text = "unknown error";
  drv->cuGetErrorString(res, &text);
  return text;
}

// Destructors cannot fail: what could not be undone is worth a line.
void noteCleanup(const CudaDriver* drv, CUresult res, const char* call, const std::string& what) {
  if (res != CUDA_SUCCESS) INFO(kLogAlloc, "%s: %s failed: %s", what.c_str(), call, errorText(drv, res));
}

}  // namespace

AllocHandle& AllocHandle::operator=(AllocHandle&& other) noexcept {
  if (this != &other) {
    reset();
    drv_ = other.drv_;
    handle_ = other.handle_;
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

void AllocHandle::reset() {
  if (held_) noteCleanup(drv_, drv_->cuMemRelease(handle_), "cuMemRelease", "window allocation handle");
  held_ = false;
}

ncclResult_t AllocHandle::retain(const CudaDriver* drv, const void* ptr, const std::string& what, AllocHandle* out) {
  CUmemGenericAllocationHandle handle = 0;
  CUresult res = drv->cuMemRetainAllocationHandle(&handle, const_cast<void*>(ptr));
  if (res != CUDA_SUCCESS) {
    WARN(
        "%s: %p is not memory mapped through CUDA's virtual memory API (%s); a window needs memory from "
        "ncclMemAlloc or cuMemCreate + cuMemMap, not cudaMalloc or host memory",
        what.c_str(), ptr, errorText(drv, res));
    return ncclInvalidArgument;
  }
  *out = AllocHandle(drv, handle);
  return ncclSuccess;
}

ncclResult_t AllocHandle::import(const CudaDriver* drv, UniqueFd fd, const std::string& what, AllocHandle* out) {
  CUmemGenericAllocationHandle handle = 0;
  void* shareable = reinterpret_cast<void*>(static_cast<uintptr_t>(fd.get()));
  CUCHECK_AT(what, drv, cuMemImportFromShareableHandle, &handle, shareable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  *out = AllocHandle(drv, handle);
  return ncclSuccess;  // fd closes here: the handle holds the memory now
}

ncclResult_t AllocHandle::exportFd(const std::string& what, UniqueFd* out) const {
  int fd = -1;
  CUresult res = drv_->cuMemExportToShareableHandle(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (res != CUDA_SUCCESS) {
    WARN(
        "%s: its allocation cannot be shared with another process (%s): allocate it with ncclMemAlloc, or with "
        "cuMemCreate and requestedHandleTypes including CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR",
        what.c_str(), errorText(drv_, res));
    return ncclInvalidUsage;
  }
  out->reset(fd);
  return ncclSuccess;
}

ncclResult_t FlatRange::reserve(const CudaDriver* drv, uint64_t bytes, uint64_t alignment, int cudaDev,
                                std::string what, std::unique_ptr<FlatRange>* out) {
  std::unique_ptr<FlatRange> range(new FlatRange(drv, cudaDev, std::move(what)));
  CUresult res = drv->cuMemAddressReserve(&range->va_, bytes, alignment, 0, 0);
  if (res != CUDA_SUCCESS) {
    WARN("%s: reserving %llu bytes of GPU address space failed: %s", range->what_.c_str(),
         static_cast<unsigned long long>(bytes), errorText(drv, res));
    return ncclSystemError;
  }
  range->bytes_ = bytes;
  *out = std::move(range);
  return ncclSuccess;
}

FlatRange::~FlatRange() {
  for (const Mapping& m : mappings_) {
    noteCleanup(drv_, drv_->cuMemUnmap(va_ + m.offset, m.bytes), "cuMemUnmap", what_);
  }
  if (va_ != 0) noteCleanup(drv_, drv_->cuMemAddressFree(va_, bytes_), "cuMemAddressFree", what_);
}

ncclResult_t FlatRange::map(uint64_t offset, uint64_t bytes, const AllocHandle& handle) {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    WARN("%s: a mapping of %llu bytes at offset %llu does not fit its %llu-byte range", what_.c_str(),
         static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(offset),
         static_cast<unsigned long long>(bytes_));
    return ncclInternalError;
  }
  CUCHECK_AT(what_, drv_, cuMemMap, va_ + offset, bytes, 0, handle.get(), 0);
  mappings_.push_back(Mapping{offset, bytes});
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = cudaDev_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUCHECK_AT(what_, drv_, cuMemSetAccess, va_ + offset, bytes, &access, 1);
  return ncclSuccess;
}

}  // namespace braid::window
