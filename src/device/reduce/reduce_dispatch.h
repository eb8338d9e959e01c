// Run-time dispatch from (ncclDataType_t, DevRedOp) to a compile-time (element type, functor) pair,
// for the kernels' switch on the work's type and op: a few kernels with a run-time switch inside,
// not a template per combination, keep the library small and its build short.
//
// visitTypeOp(dtype, redOp, visitor) calls visitor.template run<T, Fn>() once and returns true, or
// returns false without calling it for a pair no kernel supports: SumPostDiv on a floating type,
// or a value out of range. T is Fn::EltType, which for the shared
// instantiations below is the unsigned type, not the one the user named; the data is the same
// bytes. The visitor builds the functor itself: Fn fn(work.scalar).
//
// Instantiations (57 (T, Fn) pairs instead of 12 types x 6 ops = 72):
//   Sum, Prod,     9 each: int8 and uint8 share uint8_t, int32/uint32 share uint32_t, int64/uint64
//   PreMulSum      share uint64_t (two's complement wrap gives the same bits), plus half, float,
//                  double, bfloat16, fp8 e4m3, fp8 e5m2. (PreMulSum on integers is
//                  ncclRedOpCreatePreMulSum's x * scalar, wrapping; ncclAvg never makes it.)
//   Max, Min       12 each: signed integers compare as signed, so they keep their own type.
//   SumPostDiv     6: the integer types (the division is sign-aware, so no sharing).
#pragma once

#include "device/dev_types.h"
#include "device/reduce/reduce_ops.h"

namespace braid {

// ncclDataType_t values (nccl.h, NCCL 2.28). Device code does not include nccl.h; the unit test
// checks these against it.
enum DevDataType : int {
  kDevInt8 = 0,
  kDevUint8 = 1,
  kDevInt32 = 2,
  kDevUint32 = 3,
  kDevInt64 = 4,
  kDevUint64 = 5,
  kDevFloat16 = 6,
  kDevFloat32 = 7,
  kDevFloat64 = 8,
  kDevBfloat16 = 9,
  kDevFloat8e4m3 = 10,
  kDevFloat8e5m2 = 11,
  kDevNumTypes = 12
};

__host__ __device__ __forceinline__ int64_t devTypeSize(int dtype) {
  switch (dtype) {
    case kDevInt32:
    case kDevUint32:
    case kDevFloat32:
      return 4;
    case kDevInt64:
    case kDevUint64:
    case kDevFloat64:
      return 8;
    case kDevFloat16:
    case kDevBfloat16:
      return 2;
    default:
      return 1;
  }
}

namespace reduce_detail {

// Signed is the element type named by the user, Unsigned the one Sum/Prod share.
// nv_exec_check_disable: these are instantiated for the host (unit tests, with a host visitor) and
// the device (kernels, with a __device__ visitor); each instantiation only calls the visitor's run
// for its own side.
#pragma nv_exec_check_disable
template <typename T, typename Unsigned, typename Visitor>
__host__ __device__ bool visitIntegerOp(int redOp, Visitor& visitor) {
  switch (redOp) {
    case static_cast<int>(DevRedOp::kSum):
      visitor.template run<Unsigned, FuncSum<Unsigned>>();
      return true;
    case static_cast<int>(DevRedOp::kProd):
      visitor.template run<Unsigned, FuncProd<Unsigned>>();
      return true;
    case static_cast<int>(DevRedOp::kMax):
      visitor.template run<T, FuncMax<T>>();
      return true;
    case static_cast<int>(DevRedOp::kMin):
      visitor.template run<T, FuncMin<T>>();
      return true;
    case static_cast<int>(DevRedOp::kPreMulSum):
      visitor.template run<Unsigned, FuncPreMulSum<Unsigned>>();
      return true;
    case static_cast<int>(DevRedOp::kSumPostDiv):
      visitor.template run<T, FuncSumPostDiv<T>>();
      return true;
    default:  // out-of-range values
      return false;
  }
}

#pragma nv_exec_check_disable
template <typename T, typename Visitor>
__host__ __device__ bool visitFloatOp(int redOp, Visitor& visitor) {
  switch (redOp) {
    case static_cast<int>(DevRedOp::kSum):
      visitor.template run<T, FuncSum<T>>();
      return true;
    case static_cast<int>(DevRedOp::kProd):
      visitor.template run<T, FuncProd<T>>();
      return true;
    case static_cast<int>(DevRedOp::kMax):
      visitor.template run<T, FuncMax<T>>();
      return true;
    case static_cast<int>(DevRedOp::kMin):
      visitor.template run<T, FuncMin<T>>();
      return true;
    case static_cast<int>(DevRedOp::kPreMulSum):
      visitor.template run<T, FuncPreMulSum<T>>();
      return true;
    default:  // kSumPostDiv and out-of-range values
      return false;
  }
}

#pragma nv_exec_check_disable
template <typename Visitor>
__host__ __device__ bool visitTypeOpAny(int dtype, int redOp, Visitor& visitor) {
  switch (dtype) {
    case kDevInt8:
      return visitIntegerOp<int8_t, uint8_t>(redOp, visitor);
    case kDevUint8:
      return visitIntegerOp<uint8_t, uint8_t>(redOp, visitor);
    case kDevInt32:
      return visitIntegerOp<int32_t, uint32_t>(redOp, visitor);
    case kDevUint32:
      return visitIntegerOp<uint32_t, uint32_t>(redOp, visitor);
    case kDevInt64:
      return visitIntegerOp<int64_t, uint64_t>(redOp, visitor);
    case kDevUint64:
      return visitIntegerOp<uint64_t, uint64_t>(redOp, visitor);
    case kDevFloat16:
      return visitFloatOp<__half>(redOp, visitor);
    case kDevFloat32:
      return visitFloatOp<float>(redOp, visitor);
    case kDevFloat64:
      return visitFloatOp<double>(redOp, visitor);
    case kDevBfloat16:
      return visitFloatOp<__nv_bfloat16>(redOp, visitor);
    case kDevFloat8e4m3:
      return visitFloatOp<__nv_fp8_e4m3>(redOp, visitor);
    case kDevFloat8e5m2:
      return visitFloatOp<__nv_fp8_e5m2>(redOp, visitor);
    default:
      return false;
  }
}

}  // namespace reduce_detail

// The kernels' entry: visitor.template run<T, Fn>() must be callable on the device.
template <typename Visitor>
__device__ __forceinline__ bool visitTypeOp(int dtype, int redOp, Visitor& visitor) {
  return reduce_detail::visitTypeOpAny(dtype, redOp, visitor);
}

// The same mapping on the host (tests, host-side validation of a (type, op) pair).
template <typename Visitor>
inline bool visitTypeOpHost(int dtype, int redOp, Visitor& visitor) {
  return reduce_detail::visitTypeOpAny(dtype, redOp, visitor);
}

}  // namespace braid
