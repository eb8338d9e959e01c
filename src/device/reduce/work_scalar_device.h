// Device side of DevWork::scalar: a ncclRedOpCreatePreMulSum scalar of ncclScalarDevice residence
// is read where the user keeps it when the kernel starts (after waitForPreviousKernel, so a kernel
// earlier on the stream may have written it, and every graph replay sees its current value), and
// becomes the functor's bits as preMulScalarBits (work_scalar.h) makes them on the host: fp8
// widened to half, every other type as its own bits.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "device/dev_types.h"
#include "device/reduce/reduce_dispatch.h"

namespace braid {

__device__ __forceinline__ uint64_t workScalar(const DevWork& work) {
  if (work.scalarPtr == nullptr) return work.scalar;
  switch (work.dtype) {
    case kDevInt64:
    case kDevUint64:
    case kDevFloat64:
      return *static_cast<const uint64_t*>(work.scalarPtr);
    case kDevInt32:
    case kDevUint32:
    case kDevFloat32:
      return *static_cast<const uint32_t*>(work.scalarPtr);
    case kDevFloat16:
    case kDevBfloat16:
      return *static_cast<const uint16_t*>(work.scalarPtr);
    case kDevFloat8e4m3:
      return __nv_cvt_fp8_to_halfraw(*static_cast<const __nv_fp8_storage_t*>(work.scalarPtr), __NV_E4M3).x;
    case kDevFloat8e5m2:
      return __nv_cvt_fp8_to_halfraw(*static_cast<const __nv_fp8_storage_t*>(work.scalarPtr), __NV_E5M2).x;
    default:  // int8, uint8
      return *static_cast<const uint8_t*>(work.scalarPtr);
  }
}

}  // namespace braid
