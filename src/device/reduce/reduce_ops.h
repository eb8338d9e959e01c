// Reduction functors for the collective kernels, and their elementwise application to packs of
// elements (uint64_t or uint4 words moved by the protocols). Everything is __host__ __device__ so
// that tests/unit/reduce_ops_test.cu checks the same code on the CPU that the kernels run.
//
// Contract of a functor Fn<T> (T is one of the 12 element types of ncclDataType_t):
//   Fn(uint64_t scalar)       DevWork::scalar; ignored by the functors that do not use it
//   T operator()(T a, T b)    the reduction
//   T preOp(T x)              applied once to each rank's own input before it enters a reduction
//   T postOp(T x)             applied once to each fully reduced element
//   kHasPreOp, kHasPostOp     false when the op is the identity (callers skip it)
//
// Arithmetic is NVIDIA NCCL 2.28's (src/device/reduce_kernel.h, src/enqueue.cc hostToDevRedOp of
// github.com/NVIDIA/nccl, read through the code search tool):
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
//
// The pack helpers apply a functor to every element of a pack. Half and bfloat16 pairs use the
// packed intrinsics (__hadd2, ...), fp8 lanes go through half2 pairs (two cvt per four bytes), the
// 8-bit integer sum uses a SIMD-within-a-register add, and the rest works lane by lane on 32-bit
// words (64-bit types on 64-bit halves of the pack).
#pragma once

#if !defined(__CUDACC__)
#error "reduce_ops.h is CUDA code: include it from .cu files only"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <vector_types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define BRAID_RED_HD __host__ __device__ __forceinline__

namespace braid {
namespace reduce_detail {

template <int N>
struct UintOfSize;
template <>
struct UintOfSize<1> {
  using Type = uint8_t;
};
template <>
struct UintOfSize<2> {
  using Type = uint16_t;
};
template <>
struct UintOfSize<4> {
  using Type = uint32_t;
};
template <>
struct UintOfSize<8> {
  using Type = uint64_t;
};

// Raw bits of an element, through the CUDA raw structs for the types that have non-trivial
// constructors (memcpy into those would be undefined).
template <typename T>
struct BitsOf {
  using U = typename UintOfSize<sizeof(T)>::Type;
  BRAID_RED_HD static U to(T x) {
    U u;
    memcpy(&u, &x, sizeof(U));
    return u;
  }
  BRAID_RED_HD static T from(U u) {
    T x;
    memcpy(&x, &u, sizeof(U));
    return x;
  }
};
template <>
struct BitsOf<__half> {
  using U = uint16_t;
  BRAID_RED_HD static U to(__half x) { return static_cast<__half_raw>(x).x; }
  BRAID_RED_HD static __half from(U u) {
    __half_raw r;
    r.x = u;
    return __half(r);
  }
};
template <>
struct BitsOf<__nv_bfloat16> {
  using U = uint16_t;
  BRAID_RED_HD static U to(__nv_bfloat16 x) { return static_cast<__nv_bfloat16_raw>(x).x; }
  BRAID_RED_HD static __nv_bfloat16 from(U u) {
    __nv_bfloat16_raw r;
    r.x = u;
    return __nv_bfloat16(r);
  }
};
template <typename Fp8>
struct Fp8Bits {
  using U = uint8_t;
  BRAID_RED_HD static U to(Fp8 x) { return x.__x; }
  BRAID_RED_HD static Fp8 from(U u) {
    Fp8 x;
    x.__x = u;
    return x;
  }
};
template <>
struct BitsOf<__nv_fp8_e4m3> : Fp8Bits<__nv_fp8_e4m3> {};
template <>
struct BitsOf<__nv_fp8_e5m2> : Fp8Bits<__nv_fp8_e5m2> {};

// The type the arithmetic is done in: half for fp8 (exact widening, SATFINITE narrowing), the
// element type itself otherwise.
template <typename T>
struct Compute {
  using Type = T;
  BRAID_RED_HD static T to(T x) { return x; }
  BRAID_RED_HD static T from(T x) { return x; }
};
template <>
struct Compute<__nv_fp8_e4m3> {
  using Type = __half;
  BRAID_RED_HD static __half to(__nv_fp8_e4m3 x) { return static_cast<__half>(x); }
  BRAID_RED_HD static __nv_fp8_e4m3 from(__half h) { return __nv_fp8_e4m3(h); }
};
template <>
struct Compute<__nv_fp8_e5m2> {
  using Type = __half;
  BRAID_RED_HD static __half to(__nv_fp8_e5m2 x) { return static_cast<__half>(x); }
  BRAID_RED_HD static __nv_fp8_e5m2 from(__half h) { return __nv_fp8_e5m2(h); }
};

// Two adjacent elements as one packed compute value (half2/bfloat162), for the types whose
// intrinsics work on pairs. Bits holds the pair's raw bits.
template <typename T>
struct Pair {
  static constexpr bool kHas = false;
};
template <>
struct Pair<__half> {
  static constexpr bool kHas = true;
  using Bits = uint32_t;
  using V = __half2;
  BRAID_RED_HD static V load(Bits b) {
    __half2_raw r;
    r.x = static_cast<uint16_t>(b);
    r.y = static_cast<uint16_t>(b >> 16);
    return __half2(r);
  }
  BRAID_RED_HD static Bits store(V v) {
    __half2_raw r = static_cast<__half2_raw>(v);
    return static_cast<Bits>(r.x) | (static_cast<Bits>(r.y) << 16);
  }
};
template <>
struct Pair<__nv_bfloat16> {
  static constexpr bool kHas = true;
  using Bits = uint32_t;
  using V = __nv_bfloat162;
  BRAID_RED_HD static V load(Bits b) {
    __nv_bfloat162_raw r;
    r.x = static_cast<uint16_t>(b);
    r.y = static_cast<uint16_t>(b >> 16);
    return __nv_bfloat162(r);
  }
  BRAID_RED_HD static Bits store(V v) {
    __nv_bfloat162_raw r = static_cast<__nv_bfloat162_raw>(v);
    return static_cast<Bits>(r.x) | (static_cast<Bits>(r.y) << 16);
  }
};
template <__nv_fp8_interpretation_t kInterp>
struct Fp8Pair {
  static constexpr bool kHas = true;
  using Bits = uint16_t;
  using V = __half2;
  BRAID_RED_HD static V load(Bits b) { return __half2(__nv_cvt_fp8x2_to_halfraw2(b, kInterp)); }
  BRAID_RED_HD static Bits store(V v) {
    return __nv_cvt_halfraw2_to_fp8x2(static_cast<__half2_raw>(v), __NV_SATFINITE, kInterp);
  }
};
template <>
struct Pair<__nv_fp8_e4m3> : Fp8Pair<__NV_E4M3> {};
template <>
struct Pair<__nv_fp8_e5m2> : Fp8Pair<__NV_E5M2> {};

// ---- Arithmetic on compute values. Integers: wrapping, through the unsigned type. ----
template <typename T>
using EnableIfInt = std::enable_if_t<std::is_integral<T>::value, int>;

template <typename T, EnableIfInt<T> = 0>
BRAID_RED_HD T opAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T, EnableIfInt<T> = 0>
BRAID_RED_HD T opMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <typename T, EnableIfInt<T> = 0>
BRAID_RED_HD T opMulRn(T a, T b) {
  return opMul(a, b);
}
template <typename T, EnableIfInt<T> = 0>
BRAID_RED_HD T opMax(T a, T b) {
  return a > b ? a : b;
}
template <typename T, EnableIfInt<T> = 0>
BRAID_RED_HD T opMin(T a, T b) {
  return a < b ? a : b;
}

BRAID_RED_HD float opAdd(float a, float b) { return a + b; }
BRAID_RED_HD float opMul(float a, float b) { return a * b; }
// The device's max.f32/min.f64 (what fmaxf & co. compile to) return the other operand for any NaN,
// signaling ones included; glibc's fmaxf returns NaN for a signaling NaN, so the host checks first.
BRAID_RED_HD float opMax(float a, float b) {
#if !defined(__CUDA_ARCH__)
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? b : a;
#endif
  return ::fmaxf(a, b);
}
BRAID_RED_HD float opMin(float a, float b) {
#if !defined(__CUDA_ARCH__)
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? b : a;
#endif
  return ::fminf(a, b);
}
BRAID_RED_HD float opMulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
BRAID_RED_HD double opAdd(double a, double b) { return a + b; }
BRAID_RED_HD double opMul(double a, double b) { return a * b; }
BRAID_RED_HD double opMax(double a, double b) {
#if !defined(__CUDA_ARCH__)
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? b : a;
#endif
  return ::fmax(a, b);
}
BRAID_RED_HD double opMin(double a, double b) {
#if !defined(__CUDA_ARCH__)
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? b : a;
#endif
  return ::fmin(a, b);
}
BRAID_RED_HD double opMulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// half, half2, bfloat16, bfloat162: the CUDA intrinsics (host versions exist for all of them).
#define BRAID_RED_HALF_OPS(Type)                                        \
  BRAID_RED_HD Type opAdd(Type a, Type b) { return __hadd(a, b); }      \
  BRAID_RED_HD Type opMul(Type a, Type b) { return __hmul(a, b); }      \
  BRAID_RED_HD Type opMulRn(Type a, Type b) { return __hmul_rn(a, b); } \
  BRAID_RED_HD Type opMax(Type a, Type b) { return __hmax(a, b); }      \
  BRAID_RED_HD Type opMin(Type a, Type b) { return __hmin(a, b); }      \
  BRAID_RED_HD Type splatLike(Type /*like*/, Type s) { return s; }
#define BRAID_RED_HALF2_OPS(Type2, Type, splat)                             \
  BRAID_RED_HD Type2 opAdd(Type2 a, Type2 b) { return __hadd2(a, b); }      \
  BRAID_RED_HD Type2 opMul(Type2 a, Type2 b) { return __hmul2(a, b); }      \
  BRAID_RED_HD Type2 opMulRn(Type2 a, Type2 b) { return __hmul2_rn(a, b); } \
  BRAID_RED_HD Type2 opMax(Type2 a, Type2 b) { return __hmax2(a, b); }      \
  BRAID_RED_HD Type2 opMin(Type2 a, Type2 b) { return __hmin2(a, b); }      \
  BRAID_RED_HD Type2 splatLike(Type2 /*like*/, Type s) { return splat(s, s); }
BRAID_RED_HALF_OPS(__half)
BRAID_RED_HALF_OPS(__nv_bfloat16)
BRAID_RED_HALF2_OPS(__half2, __half, __halves2half2)
BRAID_RED_HALF2_OPS(__nv_bfloat162, __nv_bfloat16, __halves2bfloat162)
#undef BRAID_RED_HALF_OPS
#undef BRAID_RED_HALF2_OPS

// Scalars of the other types are used as they are.
template <typename T>
BRAID_RED_HD T splatLike(T /*like*/, T s) {
  return s;
}

// High half of a full-width unsigned product.
BRAID_RED_HD uint32_t mulHi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}
BRAID_RED_HD uint64_t mulHi(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

}  // namespace reduce_detail

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

// ---- Packs: uint64_t or uint4, seen as 32-bit words (and 64-bit halves for 8-byte types). ----
namespace reduce_detail {

template <typename Pack>
struct PackWords;
template <>
struct PackWords<uint64_t> {
  static constexpr int kWords = 2;
  BRAID_RED_HD static uint32_t get(const uint64_t& p, int i) { return static_cast<uint32_t>(p >> (32 * i)); }
  BRAID_RED_HD static void set(uint64_t& p, int i, uint32_t w) {
    p = (p & ~(uint64_t{0xffffffffu} << (32 * i))) | (static_cast<uint64_t>(w) << (32 * i));
  }
  BRAID_RED_HD static uint64_t get64(const uint64_t& p, int /*i*/) { return p; }
  BRAID_RED_HD static void set64(uint64_t& p, int /*i*/, uint64_t v) { p = v; }
};
template <>
struct PackWords<uint4> {
  static constexpr int kWords = 4;
  BRAID_RED_HD static uint32_t get(const uint4& p, int i) { return i == 0 ? p.x : i == 1 ? p.y : i == 2 ? p.z : p.w; }
  BRAID_RED_HD static void set(uint4& p, int i, uint32_t w) {
    if (i == 0) p.x = w;
    if (i == 1) p.y = w;
    if (i == 2) p.z = w;
    if (i == 3) p.w = w;
  }
  BRAID_RED_HD static uint64_t get64(const uint4& p, int i) {
    return i == 0 ? (p.x | (static_cast<uint64_t>(p.y) << 32)) : (p.z | (static_cast<uint64_t>(p.w) << 32));
  }
  BRAID_RED_HD static void set64(uint4& p, int i, uint64_t v) {
    set(p, 2 * i, static_cast<uint32_t>(v));
    set(p, 2 * i + 1, static_cast<uint32_t>(v >> 32));
  }
};

// f(T, T) -> T on each lane of two 32-bit words (sizeof(T) <= 4).
template <typename T, typename F>
BRAID_RED_HD uint32_t mapLanes(uint32_t a, uint32_t b, F f) {
  using B = BitsOf<T>;
  constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 32 / kBits; ++i) {
    const T x = B::from(static_cast<typename B::U>(a >> (i * kBits)));
    const T y = B::from(static_cast<typename B::U>(b >> (i * kBits)));
    out |= static_cast<uint32_t>(B::to(f(x, y))) << (i * kBits);
  }
  return out;
}

// g(V, V) -> V on each pair of lanes of two 32-bit words (types with Pair<T>::kHas).
template <typename T, typename G>
BRAID_RED_HD uint32_t mapPairs(uint32_t a, uint32_t b, G g) {
  using P = Pair<T>;
  constexpr int kBits = 8 * static_cast<int>(sizeof(typename P::Bits));
  uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 32 / kBits; ++i) {
    const typename P::V x = P::load(static_cast<typename P::Bits>(a >> (i * kBits)));
    const typename P::V y = P::load(static_cast<typename P::Bits>(b >> (i * kBits)));
    out |= static_cast<uint32_t>(P::store(g(x, y))) << (i * kBits);
  }
  return out;
}

// Four byte lanes added at once: the low 7 bits of each lane are added without carrying into the
// next lane, then the top bit of each lane is the xor of the two top bits and that carry.
BRAID_RED_HD uint32_t addBytes(uint32_t a, uint32_t b) {
  constexpr uint32_t kLow7 = 0x7f7f7f7fu;
  return ((a & kLow7) + (b & kLow7)) ^ ((a ^ b) & ~kLow7);
}

template <typename Fn, typename T>
BRAID_RED_HD uint32_t reduceWord(const Fn& fn, uint32_t a, uint32_t b) {
  if constexpr (Pair<T>::kHas) {
    using V = typename Pair<T>::V;
    return mapPairs<T>(a, b, [&](V x, V y) { return fn.reduceC(x, y); });
  } else if constexpr (sizeof(T) == 1 && Fn::kReduceIsSum) {
    return addBytes(a, b);
  } else {
    return mapLanes<T>(a, b, [&](T x, T y) { return fn(x, y); });
  }
}

template <typename Fn, typename T>
BRAID_RED_HD uint32_t preOpWord(const Fn& fn, uint32_t a) {
  if constexpr (Pair<T>::kHas) {
    using V = typename Pair<T>::V;
    return mapPairs<T>(a, a, [&](V x, V /*unused*/) { return fn.preOpC(x); });
  } else {
    return mapLanes<T>(a, a, [&](T x, T /*unused*/) { return fn.preOp(x); });
  }
}

template <typename Fn, typename T>
BRAID_RED_HD uint32_t postOpWord(const Fn& fn, uint32_t a) {
  return mapLanes<T>(a, a, [&](T x, T /*unused*/) { return fn.postOp(x); });
}

template <typename Fn, typename T, typename Pack>
BRAID_RED_HD void checkPack() {
  static_assert(std::is_same<typename Fn::EltType, T>::value, "functor and element type differ");
  static_assert(sizeof(Pack) % sizeof(T) == 0, "a pack holds whole elements");
  static_assert(std::is_same<Pack, uint64_t>::value || std::is_same<Pack, uint4>::value, "Pack is uint64_t or uint4");
}

}  // namespace reduce_detail

// fn(a[i], b[i]) for every element i of the packs.
template <typename Fn, typename T, typename Pack>
BRAID_RED_HD Pack applyReduce(const Fn& fn, Pack a, Pack b) {
  reduce_detail::checkPack<Fn, T, Pack>();
  using W = reduce_detail::PackWords<Pack>;
  using B = reduce_detail::BitsOf<T>;
  Pack out = a;
  if constexpr (sizeof(T) == 8) {
#pragma unroll
    for (int i = 0; i < W::kWords / 2; ++i) {
      W::set64(out, i, B::to(fn(B::from(W::get64(a, i)), B::from(W::get64(b, i)))));
    }
  } else {
#pragma unroll
    for (int i = 0; i < W::kWords; ++i)
      W::set(out, i, reduce_detail::reduceWord<Fn, T>(fn, W::get(a, i), W::get(b, i)));
  }
  return out;
}

// fn.preOp(a[i]) for every element; returns `a` itself when the functor has no pre-op.
template <typename Fn, typename T, typename Pack>
BRAID_RED_HD Pack applyPreOp(const Fn& fn, Pack a) {
  reduce_detail::checkPack<Fn, T, Pack>();
  if constexpr (!Fn::kHasPreOp) {
    return a;
  } else {
    using W = reduce_detail::PackWords<Pack>;
    using B = reduce_detail::BitsOf<T>;
    Pack out = a;
    if constexpr (sizeof(T) == 8) {
#pragma unroll
      for (int i = 0; i < W::kWords / 2; ++i) W::set64(out, i, B::to(fn.preOp(B::from(W::get64(a, i)))));
    } else {
#pragma unroll
      for (int i = 0; i < W::kWords; ++i) W::set(out, i, reduce_detail::preOpWord<Fn, T>(fn, W::get(a, i)));
    }
    return out;
  }
}

// fn.postOp(a[i]) for every element; returns `a` itself when the functor has no post-op.
template <typename Fn, typename T, typename Pack>
BRAID_RED_HD Pack applyPostOp(const Fn& fn, Pack a) {
  reduce_detail::checkPack<Fn, T, Pack>();
  if constexpr (!Fn::kHasPostOp) {
    return a;
  } else {
    using W = reduce_detail::PackWords<Pack>;
    using B = reduce_detail::BitsOf<T>;
    Pack out = a;
    if constexpr (sizeof(T) == 8) {
#pragma unroll
      for (int i = 0; i < W::kWords / 2; ++i) W::set64(out, i, B::to(fn.postOp(B::from(W::get64(a, i)))));
    } else {
#pragma unroll
      for (int i = 0; i < W::kWords; ++i) W::set(out, i, reduce_detail::postOpWord<Fn, T>(fn, W::get(a, i)));
    }
    return out;
  }
}

}  // namespace braid
