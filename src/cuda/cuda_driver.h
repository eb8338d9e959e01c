// The CUDA driver API, reached through cudaGetDriverEntryPointByVersion so that libnccl.so.2 has no
// NEEDED libcuda.so and loads (and reports a clear error) on machines without a GPU driver.
// Add an entry to the table when a layer needs another driver function.
#pragma once

#include <cuda.h>
#include <nccl.h>

namespace braid {

struct CudaDriver {
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);  // scoped_device.h: whether a thread has a context yet
  // Virtual memory management (transport/: P2P buffers shared across processes by POSIX fds).
  CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
  CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
  CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
  CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*cuMemExportToShareableHandle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                                           unsigned long long);
  CUresult (*cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType);
  // Registration (register/): what allocation a user buffer belongs to, and its cuMem handle.
  CUresult (*cuMemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr);
  CUresult (*cuMemRetainAllocationHandle)(CUmemGenericAllocationHandle*, void*);
  CUresult (*cuMemGetAccess)(unsigned long long*, const CUmemLocation*, CUdeviceptr);
  // Symmetric windows and one-sided operations (window/): where an allocation lives, and the
  // stream memory operations that write and wait on signal words without a kernel.
  CUresult (*cuMemGetAllocationPropertiesFromHandle)(CUmemAllocationProp*, CUmemGenericAllocationHandle);
  CUresult (*cuStreamBatchMemOp)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);
};

// Resolves the table once per process. Fails with ncclUnhandledCudaError and a WARN naming the
// missing function if the driver is too old or absent.
[[nodiscard]] ncclResult_t cudaDriver(const CudaDriver** out);

}  // namespace braid

// Calls a driver function through the table; WARN with the driver's error text on failure.
#define CUCHECK(drv, fn, ...)                                                           \
  do {                                                                                  \
    CUresult braidCuRes_ = (drv)->fn(__VA_ARGS__);                                      \
    if (braidCuRes_ != CUDA_SUCCESS) {                                                  \
      const char* braidCuText_ = "unknown error";                                       \
      (drv)->cuGetErrorString(braidCuRes_, &braidCuText_);                              \
      WARN("CUDA driver call %s failed: %s (%d)", #fn, braidCuText_, (int)braidCuRes_); \
      return ncclUnhandledCudaError;                                                    \
    }                                                                                   \
  } while (0)

// The same with a description (a std::string) of what the call was for leading the WARN.
#define CUCHECK_AT(what, drv, fn, ...)                                                                      \
  do {                                                                                                      \
    CUresult braidCuRes_ = (drv)->fn(__VA_ARGS__);                                                          \
    if (braidCuRes_ != CUDA_SUCCESS) {                                                                      \
      const char* braidCuText_ = "unknown error";                                                           \
      (drv)->cuGetErrorString(braidCuRes_, &braidCuText_);                                                  \
      WARN("%s: CUDA driver call %s failed: %s (%d)", (what).c_str(), #fn, braidCuText_, (int)braidCuRes_); \
      return ncclUnhandledCudaError;                                                                        \
    }                                                                                                       \
  } while (0)
