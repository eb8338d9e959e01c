#include "cuda/cuda_driver.h"

#include <cuda_runtime.h>

#include <mutex>

#include "util/log.h"

namespace braid {
namespace {

// The driver ABI version we ask for: the entry points in the table have been stable since 12.0.
constexpr unsigned kDriverAbiVersion = 12000;

CudaDriver gDriver;
ncclResult_t gLoadResult = ncclSuccess;

template <typename Fn>
bool resolve(const char* name, Fn* slot) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, kDriverAbiVersion, cudaEnableDefault, &status);
  if (err != cudaSuccess || status != cudaDriverEntryPointSuccess || fn == nullptr) {
    WARN(
        "CUDA driver function %s is not available (%s, status %d); is the NVIDIA driver installed and recent "
        "enough (>= 12.0)?",
        name, cudaGetErrorString(err), (int)status);
    return false;
  }
  *slot = reinterpret_cast<Fn>(fn);
  return true;
}

void load() {
  bool ok = resolve("cuGetErrorString", &gDriver.cuGetErrorString) && resolve("cuDeviceGet", &gDriver.cuDeviceGet) &&
            resolve("cuDeviceGetAttribute", &gDriver.cuDeviceGetAttribute) &&
            resolve("cuCtxGetCurrent", &gDriver.cuCtxGetCurrent) &&
            resolve("cuMemGetAllocationGranularity", &gDriver.cuMemGetAllocationGranularity) &&
            resolve("cuMemCreate", &gDriver.cuMemCreate) && resolve("cuMemRelease", &gDriver.cuMemRelease) &&
            resolve("cuMemAddressReserve", &gDriver.cuMemAddressReserve) &&
            resolve("cuMemAddressFree", &gDriver.cuMemAddressFree) && resolve("cuMemMap", &gDriver.cuMemMap) &&
            resolve("cuMemUnmap", &gDriver.cuMemUnmap) && resolve("cuMemSetAccess", &gDriver.cuMemSetAccess) &&
            resolve("cuMemExportToShareableHandle", &gDriver.cuMemExportToShareableHandle) &&
            resolve("cuMemImportFromShareableHandle", &gDriver.cuMemImportFromShareableHandle) &&
            resolve("cuMemGetAddressRange", &gDriver.cuMemGetAddressRange) &&
            resolve("cuMemRetainAllocationHandle", &gDriver.cuMemRetainAllocationHandle) &&
            resolve("cuMemGetAccess", &gDriver.cuMemGetAccess) &&
            resolve("cuMemGetAllocationPropertiesFromHandle", &gDriver.cuMemGetAllocationPropertiesFromHandle) &&
            resolve("cuStreamBatchMemOp", &gDriver.cuStreamBatchMemOp);
  gLoadResult = ok ? ncclSuccess : ncclUnhandledCudaError;
}

}  // namespace

ncclResult_t cudaDriver(const CudaDriver** out) {
  static std::once_flag once;
  std::call_once(once, load);
  if (gLoadResult != ncclSuccess) return gLoadResult;
  *out = &gDriver;
  return ncclSuccess;
}

}  // namespace braid
