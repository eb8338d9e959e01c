#include "register/mem_alloc.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_driver.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/log.h"

namespace braid::reg {
namespace {

struct Entry {
  size_t bytes;
  int cudaDev;
  AllocKind kind;
  CUmemGenericAllocationHandle handle;  // cuMem kinds
};

// Live allocations by base address. Allocation and free may come from any thread.
std::mutex gMutex;
std::map<uintptr_t, Entry> gAllocs;

const char* kindName(AllocKind kind) {
  switch (kind) {
    case AllocKind::kCuMemFabric:
      return "cuMem, fabric and POSIX fd handles";
    case AllocKind::kCuMemPosixFd:
      return "cuMem, POSIX fd handles";
    default:
      return "cudaMalloc";
  }
}

int deviceAttribute(const CudaDriver* drv, CUdevice dev, CUdevice_attribute attr) {
  int value = 0;
  return drv->cuDeviceGetAttribute(&value, attr, dev) == CUDA_SUCCESS ? value : 0;
}

// Read/write access for this GPU and for every GPU that can reach it; `peers` lists the latter.
std::vector<CUmemAccessDesc> accessDescs(int cudaDev, std::string* peers) {
  std::vector<CUmemAccessDesc> descs;
  auto add = [&descs](int dev) {
    CUmemAccessDesc d{};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    descs.push_back(d);
  };
  add(cudaDev);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  for (int dev = 0; dev < count; dev++) {
    int can = 0;
    if (dev == cudaDev || cudaDeviceCanAccessPeer(&can, dev, cudaDev) != cudaSuccess || can == 0) continue;
    add(dev);
    *peers += (peers->empty() ? "" : ",") + std::to_string(dev);
  }
  (void)cudaGetLastError();
  return descs;
}

// A mapped cuMem allocation under construction: whatever was made is undone unless release()d.
class CuMemMapping {
 public:
  explicit CuMemMapping(const CudaDriver* drv) : drv_(drv) {}
  ~CuMemMapping() {
    if (mapped_) (void)drv_->cuMemUnmap(va_, bytes_);
    if (va_ != 0) (void)drv_->cuMemAddressFree(va_, bytes_);
    if (hasHandle_) (void)drv_->cuMemRelease(handle_);
  }
  CuMemMapping(const CuMemMapping&) = delete;
  CuMemMapping& operator=(const CuMemMapping&) = delete;

  // Physical memory of at least `size` bytes on `dev`, shareable by fabric handle where the driver
  // grants one (it needs an IMEX channel, so it is often refused), else by POSIX fd only.
  ncclResult_t create(CUdevice dev, size_t size) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    if (deviceAttribute(drv_, dev, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED) != 0) {
      prop.allocFlags.gpuDirectRDMACapable = 1;
    }
    bool fabric = deviceAttribute(drv_, dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED) != 0;
    while (true) {
      prop.requestedHandleTypes = fabric ? static_cast<CUmemAllocationHandleType>(
                                               CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
                                         : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      CUCHECK(drv_, cuMemGetAllocationGranularity, &granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
      bytes_ = (size + granularity_ - 1) / granularity_ * granularity_;
      CUresult res = drv_->cuMemCreate(&handle_, bytes_, &prop, 0);
      if (res == CUDA_SUCCESS) break;
      const char* text = "unknown error";
      drv_->cuGetErrorString(res, &text);
      if (!fabric) {
        WARN("ncclMemAlloc: cuMemCreate of %zu bytes failed: %s (%d)", bytes_, text, static_cast<int>(res));
        return ncclUnhandledCudaError;
      }
      INFO(kLogAlloc, "ncclMemAlloc: fabric handles refused (%s); POSIX file descriptor handles only", text);
      fabric = false;
    }
    hasHandle_ = true;
    kind_ = fabric ? AllocKind::kCuMemFabric : AllocKind::kCuMemPosixFd;
    return ncclSuccess;
  }

  ncclResult_t map(const std::vector<CUmemAccessDesc>& access) {
    CUCHECK(drv_, cuMemAddressReserve, &va_, bytes_, granularity_, 0, 0);
    CUCHECK(drv_, cuMemMap, va_, bytes_, 0, handle_, 0);
    mapped_ = true;
    CUCHECK(drv_, cuMemSetAccess, va_, bytes_, access.data(), access.size());
    return ncclSuccess;
  }

  // Hands the allocation over to the registry.
  void release() {
    mapped_ = false;
    hasHandle_ = false;
    va_ = 0;
  }

  CUdeviceptr va() const { return va_; }
  size_t bytes() const { return bytes_; }
  AllocKind kind() const { return kind_; }
  CUmemGenericAllocationHandle handle() const { return handle_; }

 private:
  const CudaDriver* drv_;
  size_t granularity_ = 0;
  size_t bytes_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
  bool hasHandle_ = false;
  CUdeviceptr va_ = 0;
  bool mapped_ = false;
  AllocKind kind_ = AllocKind::kCuMemPosixFd;
};

ncclResult_t cudaMallocFallback(int cudaDev, size_t size, void** ptr) {
  void* p = nullptr;
  CUDACHECK(cudaMalloc(&p, size));
  std::lock_guard<std::mutex> lock(gMutex);
  gAllocs[reinterpret_cast<uintptr_t>(p)] = Entry{size, cudaDev, AllocKind::kCudaMalloc, 0};
  *ptr = p;
  INFO(kLogAlloc, "ncclMemAlloc: %zu bytes at %p on GPU %d with cudaMalloc (the GPU has no virtual memory management)",
       size, p, cudaDev);
  return ncclSuccess;
}

}  // namespace

ncclResult_t memAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) {
    WARN("ncclMemAlloc: ptr is NULL");
    return ncclInvalidArgument;
  }
  if (size == 0) {
    WARN("ncclMemAlloc: size is 0");
    return ncclInvalidArgument;
  }
  int cudaDev = -1;
  CUDACHECK(cudaGetDevice(&cudaDev));
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  CUdevice dev = 0;
  CUCHECK(drv, cuDeviceGet, &dev, cudaDev);
  if (deviceAttribute(drv, dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    return cudaMallocFallback(cudaDev, size, ptr);
  }
  CuMemMapping mapping(drv);
  NCCLCHECK(mapping.create(dev, size));
  std::string peers;
  NCCLCHECK(mapping.map(accessDescs(cudaDev, &peers)));
  void* p = reinterpret_cast<void*>(mapping.va());
  {
    std::lock_guard<std::mutex> lock(gMutex);
    gAllocs[mapping.va()] = Entry{mapping.bytes(), cudaDev, mapping.kind(), mapping.handle()};
  }
  INFO(kLogAlloc, "ncclMemAlloc: %zu bytes (%zu asked) at %p on GPU %d (%s), read/write access for GPUs %s",
       mapping.bytes(), size, p, cudaDev, kindName(mapping.kind()), peers.empty() ? "none" : peers.c_str());
  mapping.release();
  *ptr = p;
  return ncclSuccess;
}

ncclResult_t memFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;  // as cudaFree(NULL)
  Entry entry{};
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gAllocs.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == gAllocs.end()) {
      WARN("ncclMemFree: %p is not an allocation of ncclMemAlloc (or it was freed already)", ptr);
      return ncclInvalidArgument;
    }
    entry = it->second;
    gAllocs.erase(it);
  }
  ScopedDevice device(entry.cudaDev);
  if (entry.kind == AllocKind::kCudaMalloc) {
    CUDACHECK(cudaFree(ptr));
    return ncclSuccess;
  }
  // Unmapping memory that kernels still use is undefined; cudaFree would have waited too.
  CUDACHECK(cudaDeviceSynchronize());
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  const CUdeviceptr va = reinterpret_cast<CUdeviceptr>(ptr);
  CUCHECK(drv, cuMemUnmap, va, entry.bytes);
  CUCHECK(drv, cuMemAddressFree, va, entry.bytes);
  CUCHECK(drv, cuMemRelease, entry.handle);
  INFO(kLogAlloc, "ncclMemFree: %zu bytes at %p on GPU %d", entry.bytes, ptr, entry.cudaDev);
  return ncclSuccess;
}

bool findAlloc(const void* ptr, AllocInfo* out) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gAllocs.upper_bound(p);
  if (it == gAllocs.begin()) return false;
  --it;
  if (p >= it->first + it->second.bytes) return false;
  *out = AllocInfo{reinterpret_cast<void*>(it->first), it->second.bytes, it->second.cudaDev, it->second.kind};
  return true;
}

}  // namespace braid::reg
