// What the reduction tests share (reduce_ops_test.cu, reduce_dispatch_test.cu): the fp8 aliases,
// conversions to double for the references, and equality of results bit for bit (NaNs and, where
// unspecified, zeros of either sign alike).
#pragma once

#include <gtest/gtest.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <typeinfo>
#include <vector>

#include "device/reduce/reduce_dispatch.h"
#include "device/reduce/reduce_ops.h"
#include "device/reduce/work_scalar.h"
#include "util/dtype.h"

namespace braid {
namespace reduce_test {

using E4m3 = __nv_fp8_e4m3;
using E5m2 = __nv_fp8_e5m2;
using reduce_detail::BitsOf;

constexpr bool sameValue(DevDataType a, ncclDataType_t b) { return static_cast<int>(a) == static_cast<int>(b); }
static_assert(sameValue(kDevInt8, ncclInt8) && sameValue(kDevUint8, ncclUint8) && sameValue(kDevInt32, ncclInt32) &&
                  sameValue(kDevUint32, ncclUint32) && sameValue(kDevInt64, ncclInt64) &&
                  sameValue(kDevUint64, ncclUint64) && sameValue(kDevFloat16, ncclFloat16) &&
                  sameValue(kDevFloat32, ncclFloat32) && sameValue(kDevFloat64, ncclFloat64) &&
                  sameValue(kDevBfloat16, ncclBfloat16) && sameValue(kDevFloat8e4m3, ncclFloat8e4m3) &&
                  sameValue(kDevFloat8e5m2, ncclFloat8e5m2) && sameValue(kDevNumTypes, ncclNumTypes),
              "DevDataType must match ncclDataType_t");

// ---- Conversions for the references ----
inline double toD(__half x) { return __half2float(x); }
inline double toD(__nv_bfloat16 x) { return __bfloat162float(x); }
inline double toD(E4m3 x) { return static_cast<float>(x); }
inline double toD(E5m2 x) { return static_cast<float>(x); }
inline double toD(float x) { return x; }
inline double toD(double x) { return x; }

template <typename T>
T fromD(double d);
template <>
inline __half fromD<__half>(double d) {
  return __double2half(d);
}
template <>
inline __nv_bfloat16 fromD<__nv_bfloat16>(double d) {
  return __double2bfloat16(d);
}
template <>
inline E4m3 fromD<E4m3>(double d) {
  return BitsOf<E4m3>::from(__nv_cvt_double_to_fp8(d, __NV_SATFINITE, __NV_E4M3));
}
template <>
inline E5m2 fromD<E5m2>(double d) {
  return BitsOf<E5m2>::from(__nv_cvt_double_to_fp8(d, __NV_SATFINITE, __NV_E5M2));
}
template <>
inline float fromD<float>(double d) {
  return static_cast<float>(d);
}
template <>
inline double fromD<double>(double d) {
  return d;
}

template <typename T>
constexpr bool kIsFp8 = std::is_same<T, E4m3>::value || std::is_same<T, E5m2>::value;
// Types whose Max/Min order +0 above -0 (CUDA's __hmax/__hmin); fmaxf/fmax leave it unspecified.
template <typename T>
constexpr bool kZeroSignDefined = !std::is_same<T, float>::value && !std::is_same<T, double>::value;

template <typename T>
inline uint64_t bitsU64(T x) {
  return BitsOf<T>::to(x);
}
template <typename T>
inline bool isNan(T x) {
  return std::isnan(toD(x));
}

// Exact value of a op b in double, rounded once to T. For fp8, NCCL rounds to half first and then
// to fp8 with SATFINITE; the model does the same from the exact value (fp8 x fp8 and fp8 x half
// products and fp8 sums are exact in double).
template <typename T>
T roundResult(double exact) {
  if constexpr (kIsFp8<T>) {
    return fromD<T>(toD(__double2half(exact)));
  } else {
    return fromD<T>(exact);
  }
}

inline double refMaxMin(double a, double b, bool isMax) {
  if (std::isnan(a) && std::isnan(b)) return std::nan("");
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b && a == 0) return (std::signbit(a) == isMax) ? b : a;
  return isMax ? (a > b ? a : b) : (a < b ? a : b);
}

// Equality of results: same bits, or both NaN, or (where unspecified) zeros of either sign.
template <typename T>
::testing::AssertionResult sameResult(T got, T want, bool anyZeroSign = false) {
  if (bitsU64(got) == bitsU64(want)) return ::testing::AssertionSuccess();
  if (isNan(got) && isNan(want)) return ::testing::AssertionSuccess();
  if (anyZeroSign && toD(got) == 0 && toD(want) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << toD(got) << " (bits 0x" << std::hex << bitsU64(got) << ") want "
                                       << toD(want) << " (bits 0x" << bitsU64(want) << ")";
}

}  // namespace reduce_test
}  // namespace braid
