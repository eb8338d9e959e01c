// The element types of the reductions (reduce_functors.h) as the arithmetic sees them: raw bits,
// the type computed in (half for fp8), adjacent pairs for the packed intrinsics, and the
// wrapping, NaN-aware arithmetic on them. __host__ __device__, like everything of reduce_ops.h.
#pragma once

#if !defined(__CUDACC__)
#error "reduce_elements.h is CUDA code: include it from .cu files only"
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

}  // namespace braid
