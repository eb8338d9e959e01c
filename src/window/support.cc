#include "window/support.h"

#include <cuda_runtime.h>

namespace braid::window {
namespace {

constexpr int kRmaMinDriver = 12050;

int attribute(const CudaDriver* drv, int cudaDev, CUdevice_attribute attr) {
  CUdevice dev = 0;
  int value = 0;
  if (drv->cuDeviceGet(&dev, cudaDev) != CUDA_SUCCESS) return 0;
  return drv->cuDeviceGetAttribute(&value, attr, dev) == CUDA_SUCCESS ? value : 0;
}

}  // namespace

bool windowSupport(const CudaDriver* drv, int cudaDev, std::string* why) {
  if (attribute(drv, cudaDev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0) {
    *why = "GPU " + std::to_string(cudaDev) + " has no virtual memory management (cuMemMap), which windows need";
    return false;
  }
  return true;
}

bool rmaSupport(const CudaDriver* drv, int cudaDev, std::string* why) {
  if (!windowSupport(drv, cudaDev, why)) return false;
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess || version < kRmaMinDriver) {
    (void)cudaGetLastError();
    *why = "one-sided operations need a CUDA driver of version 12.5 or later (this one is " +
           std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + ")";
    return false;
  }
  if (attribute(drv, cudaDev, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) == 0) {
    *why = "GPU " + std::to_string(cudaDev) + " has no 64-bit stream memory operations, which one-sided signals use";
    return false;
  }
  return true;
}

}  // namespace braid::window
