// Reduction functors for the collective kernels. Everything is __host__ __device__ so that
// tests/unit/reduce_ops_test.cu checks the same code on the CPU that the kernels run (reduce_ops.h
// gathers this file and the pack helpers of reduce_packs.h).
//
// Contract of a functor Fn<T> (T is one of the 12 element types of ncclDataType_t):
//   Fn(uint64_t scalar)       DevWork::scalar; ignored by the functors that do not use it
//   T operator()(T a, T b)    the reduction
//   T preOp(T x)              applied once to each rank's own input before it enters a reduction
//   T postOp(T x)             applied once to each fully reduced element
//   kHasPreOp, kHasPostOp     false when the op is the identity (callers skip it)
//
// Arithmetic is NVIDIA NCCL 2.28's (its device reductions and its mapping of ncclRedOp_t to them):
//   - Integers: Sum and Prod wrap (computed in the unsigned type). Max/Min compare as signed for
//     the signed types (NCCL maps them to the unsigned function with an xor mask on the sign bit;
//     same results). Avg is SumPostDiv: sum, then one division by nranks truncating toward zero,
//     signed types dividing the magnitude and restoring the sign (NCCL: FuncSumPostDiv::divide,
//     by multiplying with a precomputed reciprocal plus one correction step; so do we).
//   - float/double: plain + and *; Max/Min with fmaxf/fminf (fmax/fmin): a NaN operand is ignored
//     (the other operand is returned), two NaNs give NaN.
//   - half and bfloat16 (sm_80+ path of NCCL): __hadd, __hmul, __hmax, __hmin and their packed
//     *2 forms. __hmax/__hmin return the non-NaN operand when one is NaN, the canonical NaN when
//     both are, and order +0 above -0 (CUDA's cuda_fp16.h/cuda_bf16.h documentation).
//   - fp8 e4m3/e5m2 (NCCL's sm_90 path): each operand is converted exactly to half, the half op
//     (__hadd/__hmul/__hmax/__hmin) is applied, and the half result is converted back with the
//     __nv_fp8_e4m3(__half)/__nv_fp8_e5m2(__half) constructors: round to nearest even with
//     __NV_SATFINITE (overflow saturates to the largest finite value, +-448 for e4m3 and +-57344
//     for e5m2; NaN stays NaN; e5m2 inf, which half arithmetic can produce, saturates too).
//   - PreMulSum: preOp(x) = x * scalar, then Sum. For fp8 the product is computed in half and
//     rounded back to fp8 before the sum, as NCCL does. NCCL passes the fp8 scalar as fp8 bits and
//     widens it to half on the device; we pass the (exactly) widened half bits in DevWork::scalar,
//     which is the same value (see work_scalar.h).
//   - One deliberate difference: NCCL multiplies with `*`/__hmul, which lets the compiler fuse the
//     pre-multiply with the following add into an FMA depending on how a kernel is inlined. We use
//     the _rn forms (__fmul_rn, __dmul_rn, __hmul_rn), which round the product the same way but are
//     never contracted, so a result does not depend on which protocol's code path computed it.
#pragma once

#if !defined(__CUDACC__)
#error "reduce_functors.h is CUDA code: include it from .cu files only"
#endif

#include <cstdint>

#include "device/reduce/reduce_elements.h"

namespace braid {

// ---- The functors. reduceC/preOpC/postOpC work on compute values: a scalar of
// Compute<T>::Type, or a Pair<T>::V of two of them; the pack helpers use the pair forms. ----

template <typename T>
struct FuncSum {
  using EltType = T;
  using C = reduce_detail::Compute<T>;
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  static constexpr bool kReduceIsSum = true;
  BRAID_RED_HD explicit FuncSum(uint64_t /*scalar*/ = 0) {}
  template <typename V>
  BRAID_RED_HD V reduceC(V a, V b) const {
    return reduce_detail::opAdd(a, b);
  }
  BRAID_RED_HD T operator()(T a, T b) const { return C::from(reduceC(C::to(a), C::to(b))); }
  BRAID_RED_HD T preOp(T x) const { return x; }
  BRAID_RED_HD T postOp(T x) const { return x; }
};

template <typename T>
struct FuncProd {
  using EltType = T;
  using C = reduce_detail::Compute<T>;
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  static constexpr bool kReduceIsSum = false;
  BRAID_RED_HD explicit FuncProd(uint64_t /*scalar*/ = 0) {}
  template <typename V>
  BRAID_RED_HD V reduceC(V a, V b) const {
    return reduce_detail::opMul(a, b);
  }
  BRAID_RED_HD T operator()(T a, T b) const { return C::from(reduceC(C::to(a), C::to(b))); }
  BRAID_RED_HD T preOp(T x) const { return x; }
  BRAID_RED_HD T postOp(T x) const { return x; }
};

template <typename T>
struct FuncMax {
  using EltType = T;
  using C = reduce_detail::Compute<T>;
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  static constexpr bool kReduceIsSum = false;
  BRAID_RED_HD explicit FuncMax(uint64_t /*scalar*/ = 0) {}
  template <typename V>
  BRAID_RED_HD V reduceC(V a, V b) const {
    return reduce_detail::opMax(a, b);
  }
  BRAID_RED_HD T operator()(T a, T b) const { return C::from(reduceC(C::to(a), C::to(b))); }
  BRAID_RED_HD T preOp(T x) const { return x; }
  BRAID_RED_HD T postOp(T x) const { return x; }
};

template <typename T>
struct FuncMin {
  using EltType = T;
  using C = reduce_detail::Compute<T>;
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  static constexpr bool kReduceIsSum = false;
  BRAID_RED_HD explicit FuncMin(uint64_t /*scalar*/ = 0) {}
  template <typename V>
  BRAID_RED_HD V reduceC(V a, V b) const {
    return reduce_detail::opMin(a, b);
  }
  BRAID_RED_HD T operator()(T a, T b) const { return C::from(reduceC(C::to(a), C::to(b))); }
  BRAID_RED_HD T preOp(T x) const { return x; }
  BRAID_RED_HD T postOp(T x) const { return x; }
};

// Sum of inputs each multiplied first by a scalar: ncclAvg on floating types (scalar 1/nranks)
// and ncclRedOpCreatePreMulSum. `scalar` holds the bits of T in its low bytes; for fp8 types the
// bits of a __half.
template <typename T>
struct FuncPreMulSum {
  using EltType = T;
  using C = reduce_detail::Compute<T>;
  using S = typename C::Type;
  static constexpr bool kHasPreOp = true;
  static constexpr bool kHasPostOp = false;
  static constexpr bool kReduceIsSum = true;
  S scalar_;
  BRAID_RED_HD explicit FuncPreMulSum(uint64_t scalar = 0)
      : scalar_(reduce_detail::BitsOf<S>::from(static_cast<typename reduce_detail::BitsOf<S>::U>(scalar))) {}
  template <typename V>
  BRAID_RED_HD V reduceC(V a, V b) const {
    return reduce_detail::opAdd(a, b);
  }
  template <typename V>
  BRAID_RED_HD V preOpC(V x) const {
    return reduce_detail::opMulRn(x, reduce_detail::splatLike(x, scalar_));
  }
  BRAID_RED_HD T operator()(T a, T b) const { return C::from(reduceC(C::to(a), C::to(b))); }
  BRAID_RED_HD T preOp(T x) const { return C::from(preOpC(C::to(x))); }
  BRAID_RED_HD T postOp(T x) const { return x; }
};

// Sum, then divide by `scalar` (ncclAvg on integer types), truncating toward zero like C's `/`.
// The division multiplies by a reciprocal computed once (NCCL does the same): q0 = mulhi(x, r)
// with r = floor((2^N-1)/d) satisfies floor(x/d) - 1 <= q0 <= floor(x/d) for x < 2^N, so one
// correction step gives the exact quotient. A divisor of 0 is taken as 1.
template <typename T>
struct FuncSumPostDiv {
  static_assert(std::is_integral<T>::value, "FuncSumPostDiv implements ncclAvg on integer types only");
  using EltType = T;
  using Wide = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = true;
  static constexpr bool kReduceIsSum = true;
  Wide divisor_;
  Wide recip_;
  BRAID_RED_HD explicit FuncSumPostDiv(uint64_t scalar = 1)
      : divisor_(scalar == 0 ? Wide(1) : static_cast<Wide>(scalar)), recip_(static_cast<Wide>(~Wide(0)) / divisor_) {}
  template <typename V>
  BRAID_RED_HD V reduceC(V a, V b) const {
    return reduce_detail::opAdd(a, b);
  }
  BRAID_RED_HD T operator()(T a, T b) const { return reduce_detail::opAdd(a, b); }
  BRAID_RED_HD T preOp(T x) const { return x; }
  BRAID_RED_HD T postOp(T x) const {
    const bool negative = std::is_signed<T>::value && x < T(0);
    // static_cast<Wide>(x) sign-extends, so 0 - it is |x| (also for the most negative value).
    const Wide magnitude = negative ? Wide(0) - static_cast<Wide>(x) : static_cast<Wide>(x);
    Wide q = reduce_detail::mulHi(magnitude, recip_);
    if (magnitude - q * divisor_ >= divisor_) q += 1;
    return negative ? static_cast<T>(Wide(0) - q) : static_cast<T>(q);
  }
};

}  // namespace braid
