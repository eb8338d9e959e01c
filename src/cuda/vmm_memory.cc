#include "cuda/vmm_memory.h"

#include <cstdint>

#include "util/check.h"

namespace braid {
namespace {

CUmemAllocationProp deviceProp(CUdevice device, bool exportable) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

CUmemAccessDesc readWrite(int cudaDev) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = cudaDev;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

const char* errorText(const CudaDriver* drv, CUresult res) {
  const char* text = "unknown error";
  drv->cuGetErrorString(res, &text);
  return text;
}

}  // namespace

ncclResult_t VmmMemory::check(CUresult res, const char* call, LogLevel level) const {
  if (res == CUDA_SUCCESS) return ncclSuccess;
  const uint64_t subsys = level == LogLevel::kWarn ? kLogAll : (kLogInit | kLogAlloc);
  logMessage(level, subsys, __FILE__, __LINE__, "%s: CUDA driver call %s failed: %s (%d)", what_.c_str(), call,
             errorText(drv_, res), static_cast<int>(res));
  return ncclUnhandledCudaError;
}

ncclResult_t VmmMemory::allocate(const CudaDriver* drv, int cudaDev, size_t bytes, bool exportable,
                                 const std::string& what, LogLevel level, std::unique_ptr<VmmMemory>* out) {
  std::unique_ptr<VmmMemory> mem(new VmmMemory(drv, cudaDev, what));
  mem->owned_ = true;
  mem->exportable_ = exportable;
  CUmemAllocationProp prop = deviceProp(cudaDev, exportable);
  size_t granularity = 0;
  NCCLCHECK(mem->check(drv->cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                       "cuMemGetAllocationGranularity", level));
  const size_t rounded = (bytes + granularity - 1) / granularity * granularity;
  NCCLCHECK(mem->reserve(rounded, granularity, level));
  NCCLCHECK(mem->create(level));
  NCCLCHECK(mem->mapHandle(level));
  *out = std::move(mem);
  return ncclSuccess;
}

ncclResult_t VmmMemory::import(const CudaDriver* drv, int cudaDev, size_t bytes, UniqueFd fd, const std::string& what,
                               std::unique_ptr<VmmMemory>* out) {
  std::unique_ptr<VmmMemory> mem(new VmmMemory(drv, cudaDev, what));
  NCCLCHECK(mem->importHandle(std::move(fd)));
  // The exporter rounded the size to its granularity; alignment 0 asks for the default one.
  NCCLCHECK(mem->reserve(bytes, 0, LogLevel::kWarn));
  NCCLCHECK(mem->mapHandle(LogLevel::kWarn));
  *out = std::move(mem);
  return ncclSuccess;
}

VmmMemory::~VmmMemory() {
  // Destructors cannot fail; what could not be freed is worth a line, not an error.
  if (mapped_) (void)check(drv_->cuMemUnmap(va_, bytes_), "cuMemUnmap", LogLevel::kInfo);
  if (reserved_) (void)check(drv_->cuMemAddressFree(va_, bytes_), "cuMemAddressFree", LogLevel::kInfo);
  if (hasHandle_) (void)check(drv_->cuMemRelease(handle_), "cuMemRelease", LogLevel::kInfo);
}

ncclResult_t VmmMemory::reserve(size_t bytes, size_t alignment, LogLevel level) {
  NCCLCHECK(check(drv_->cuMemAddressReserve(&va_, bytes, alignment, 0, 0), "cuMemAddressReserve", level));
  bytes_ = bytes;
  reserved_ = true;
  return ncclSuccess;
}

ncclResult_t VmmMemory::create(LogLevel level) {
  CUmemAllocationProp prop = deviceProp(cudaDev_, exportable_);
  NCCLCHECK(check(drv_->cuMemCreate(&handle_, bytes_, &prop, 0), "cuMemCreate", level));
  hasHandle_ = true;
  return ncclSuccess;
}

ncclResult_t VmmMemory::importHandle(UniqueFd fd) {
  if (!fd.valid()) {
    WARN("%s: no file descriptor to import the peer's memory from", what_.c_str());
    return ncclInternalError;
  }
  void* shareable = reinterpret_cast<void*>(static_cast<uintptr_t>(fd.get()));
  NCCLCHECK(check(drv_->cuMemImportFromShareableHandle(&handle_, shareable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                  "cuMemImportFromShareableHandle", LogLevel::kWarn));
  hasHandle_ = true;
  return ncclSuccess;  // fd closes here: the handle holds the memory now
}

ncclResult_t VmmMemory::mapHandle(LogLevel level) {
  NCCLCHECK(check(drv_->cuMemMap(va_, bytes_, 0, handle_, 0), "cuMemMap", level));
  mapped_ = true;
  const CUmemAccessDesc access = readWrite(cudaDev_);
  return check(drv_->cuMemSetAccess(va_, bytes_, &access, 1), "cuMemSetAccess", level);
}

ncclResult_t VmmMemory::exportFd(UniqueFd* out) const {
  if (!owned_ || !exportable_ || !hasHandle_) {
    WARN("%s: this memory cannot be exported (owned %d, exportable %d, mapped %d)", what_.c_str(), owned_, exportable_,
         hasHandle_);
    return ncclInternalError;
  }
  int shareable = -1;
  NCCLCHECK(check(drv_->cuMemExportToShareableHandle(&shareable, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                  "cuMemExportToShareableHandle", LogLevel::kWarn));
  out->reset(shareable);
  return ncclSuccess;
}

ncclResult_t VmmMemory::unmap() {
  if (mapped_) {
    NCCLCHECK(check(drv_->cuMemUnmap(va_, bytes_), "cuMemUnmap", LogLevel::kWarn));
    mapped_ = false;
  }
  if (hasHandle_) {
    NCCLCHECK(check(drv_->cuMemRelease(handle_), "cuMemRelease", LogLevel::kWarn));
    hasHandle_ = false;
  }
  return ncclSuccess;
}

ncclResult_t VmmMemory::remap() {
  if (!owned_ || mapped_) {
    WARN("%s: remap of memory that is %s", what_.c_str(), owned_ ? "still mapped" : "not this process's own");
    return ncclInternalError;
  }
  NCCLCHECK(create(LogLevel::kWarn));
  return mapHandle(LogLevel::kWarn);
}

ncclResult_t VmmMemory::remapImported(UniqueFd fd) {
  if (owned_ || mapped_) {
    WARN("%s: remap of a peer's memory that is %s", what_.c_str(), owned_ ? "this process's own" : "still mapped");
    return ncclInternalError;
  }
  NCCLCHECK(importHandle(std::move(fd)));
  return mapHandle(LogLevel::kWarn);
}

ncclResult_t grantVmmAccess(const CudaDriver* drv, void* ptr, size_t bytes, int cudaDev, const std::string& what) {
  const CUmemAccessDesc access = readWrite(cudaDev);
  CUCHECK_AT(what, drv, cuMemSetAccess, reinterpret_cast<CUdeviceptr>(ptr), bytes, &access, 1);
  return ncclSuccess;
}

}  // namespace braid
