#include "window/local_alloc.h"

#include "util/check.h"
#include "util/log.h"
#include "window/window_types.h"

namespace braid::window {
namespace {

// The allocation's placement and mapping granularity, from its handle.
ncclResult_t checkPlacement(const CudaDriver* drv, const AllocHandle& handle, int cudaDev, const void* buff,
                            const std::string& what, uint64_t* granularity) {
  CUmemAllocationProp prop{};
  CUCHECK_AT(what, drv, cuMemGetAllocationPropertiesFromHandle, &prop, handle.get());
  if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    WARN("%s: buff %p is host memory mapped through cuMem (location type %d); a window needs GPU memory", what.c_str(),
         buff, static_cast<int>(prop.location.type));
    return ncclInvalidArgument;
  }
  if (prop.location.id != cudaDev) {
    WARN("%s: buff %p is memory of GPU %d, and the communicator drives GPU %d", what.c_str(), buff, prop.location.id,
         cudaDev);
    return ncclInvalidArgument;
  }
  size_t gran = 0;
  CUCHECK_AT(what, drv, cuMemGetAllocationGranularity, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  *granularity = gran;
  return ncclSuccess;
}

}  // namespace

ncclResult_t prepareLocalAllocation(const CudaDriver* drv, int cudaDev, void* buff, uint64_t bytes, bool exportFd,
                                    const std::string& what, LocalAllocation* out) {
  CUdeviceptr base = 0;
  size_t length = 0;
  if (drv->cuMemGetAddressRange(&base, &length, reinterpret_cast<CUdeviceptr>(buff)) != CUDA_SUCCESS) {
    WARN("%s: buff %p is not GPU memory this process can address (host memory?)", what.c_str(), buff);
    return ncclInvalidArgument;
  }
  NCCLCHECK(AllocHandle::retain(drv, buff, what, &out->handle));
  NCCLCHECK(checkPlacement(drv, out->handle, cudaDev, buff, what, &out->granularity));
  out->allocBase = reinterpret_cast<char*>(base);
  out->allocBytes = length;
  out->memOffset = static_cast<uint64_t>(static_cast<char*>(buff) - out->allocBase);
  if (out->memOffset % kWinAlignment != 0) {
    WARN("%s: buff %p starts %llu bytes into its allocation (%p); a window must start at a multiple of %llu bytes",
         what.c_str(), buff, static_cast<unsigned long long>(out->memOffset), static_cast<void*>(out->allocBase),
         static_cast<unsigned long long>(kWinAlignment));
    return ncclInvalidArgument;
  }
  if (bytes > out->allocBytes - out->memOffset) {
    WARN(
        "%s: [%p, +%llu) runs past the end of its allocation (%p, %llu bytes); windows over several physical "
        "allocations are not implemented in this version of Braid",
        what.c_str(), buff, static_cast<unsigned long long>(bytes), static_cast<void*>(out->allocBase),
        static_cast<unsigned long long>(out->allocBytes));
    return ncclInvalidUsage;
  }
  if (out->allocBytes % out->granularity != 0) {
    WARN("%s: its allocation (%p, %llu bytes) is not a whole number of %llu-byte pages", what.c_str(),
         static_cast<void*>(out->allocBase), static_cast<unsigned long long>(out->allocBytes),
         static_cast<unsigned long long>(out->granularity));
    return ncclInvalidUsage;
  }
  if (exportFd) NCCLCHECK(out->handle.exportFd(what, &out->fd));
  return ncclSuccess;
}

}  // namespace braid::window
