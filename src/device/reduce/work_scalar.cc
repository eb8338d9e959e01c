#include "device/reduce/work_scalar.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstring>

namespace braid {
namespace {

template <typename T>
uint64_t bitsOf(T value) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "scalar wider than DevWork::scalar");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));  // little endian: the value's bytes are the low bytes
  return bits;
}

uint64_t halfBits(__half h) { return static_cast<__half_raw>(h).x; }

uint64_t fp8ToHalfBits(__nv_fp8_storage_t f8, __nv_fp8_interpretation_t interp) {
  return __nv_cvt_fp8_to_halfraw(f8, interp).x;
}

uint64_t fp8ScalarBits(float value, __nv_fp8_interpretation_t interp) {
  return fp8ToHalfBits(__nv_cvt_float_to_fp8(value, __NV_SATFINITE, interp), interp);
}

}  // namespace

uint64_t avgScalarBits(ncclDataType_t dtype, int nranks) {
  if (nranks < 1) return 0;
  // NCCL computes 1/n in double and rounds it to float first for every type but double.
  const double inverse = 1.0 / nranks;
  const float inverseF = static_cast<float>(inverse);
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclInt32:
    case ncclUint32:
    case ncclInt64:
    case ncclUint64:
      return static_cast<uint64_t>(nranks);
    case ncclFloat16:
      return halfBits(__float2half(inverseF));
    case ncclBfloat16:
      return static_cast<__nv_bfloat16_raw>(__float2bfloat16(inverseF)).x;
    case ncclFloat32:
      return bitsOf(inverseF);
    case ncclFloat64:
      return bitsOf(inverse);
    case ncclFloat8e4m3:
      return fp8ScalarBits(inverseF, __NV_E4M3);
    case ncclFloat8e5m2:
      return fp8ScalarBits(inverseF, __NV_E5M2);
    default:
      return 0;
  }
}

uint64_t preMulScalarBits(ncclDataType_t dtype, uint64_t valueBits) {
  switch (dtype) {
    case ncclFloat8e4m3:
      return fp8ToHalfBits(static_cast<__nv_fp8_storage_t>(valueBits & 0xff), __NV_E4M3);
    case ncclFloat8e5m2:
      return fp8ToHalfBits(static_cast<__nv_fp8_storage_t>(valueBits & 0xff), __NV_E5M2);
    default:
      return valueBits;
  }
}

}  // namespace braid
