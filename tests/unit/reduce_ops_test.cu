// Reduction functors (src/device/reduce/) on the CPU: every functor on every type it supports
// against an independent reference (exact for integers, double precision rounded once for the
// floating types, NCCL's "compute in half, narrow with SATFINITE" model for fp8), and the ncclAvg
// and PreMulSum scalars. The dispatch and the pack helpers: reduce_dispatch_test.cu.
#include "reduce_test_util.h"

namespace braid {
namespace {

using namespace reduce_test;

// ---- Sample values ----
template <typename T>
std::vector<T> floatSamples(std::mt19937_64& rng) {
  std::vector<T> v;
  if constexpr (sizeof(T) == 1) {
    for (int b = 0; b < 256; ++b) v.push_back(BitsOf<T>::from(static_cast<uint8_t>(b)));
    return v;
  } else {
    const double inf = std::numeric_limits<double>::infinity();
    for (double d : {0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.25, 1e-3, 65504.0, -65504.0, 1e30, inf, -inf, std::nan("")}) {
      v.push_back(fromD<T>(d));
    }
    using U = typename BitsOf<T>::U;
    std::uniform_real_distribution<double> uniform(-1000.0, 1000.0);
    for (int i = 0; i < 300; ++i) v.push_back(BitsOf<T>::from(static_cast<U>(rng())));
    for (int i = 0; i < 300; ++i) v.push_back(fromD<T>(uniform(rng)));
    return v;
  }
}

template <typename T>
std::vector<T> intSamples(std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0), T(1), T(2), T(3), T(7), L::max(), L::min(), T(L::max() - 1), T(L::min() + 1)};
  if (std::is_signed<T>::value) {
    for (T x : {T(-1), T(-2), T(-3), T(-7), T(-8), T(-9)}) v.push_back(x);
  }
  for (int i = 0; i < 400; ++i) v.push_back(static_cast<T>(rng()));
  for (int i = 0; i < 100; ++i) v.push_back(static_cast<T>(static_cast<int64_t>(rng() % 2001) - 1000));
  return v;
}

// ---- Integer functors ----
template <typename T>
T truncateTo(uint64_t bits) {
  T r;
  memcpy(&r, &bits, sizeof(T));  // little endian: the low bytes
  return r;
}

template <typename T>
void checkIntegerOps() {
  SCOPED_TRACE(typeid(T).name());
  std::mt19937_64 rng(1234 + sizeof(T));
  const std::vector<T> s = intSamples<T>(rng);
  const FuncSum<T> sum;
  const FuncProd<T> prod;
  const FuncMax<T> mx;
  const FuncMin<T> mn;
  const FuncSumPostDiv<T> avgSum(3);
  for (T a : s) {
    for (T b : s) {
      // Two's complement wrap: the low bits of the 64-bit sum/product of the sign-extended values.
      const uint64_t wa = static_cast<uint64_t>(a);
      const uint64_t wb = static_cast<uint64_t>(b);
      ASSERT_EQ(truncateTo<T>(wa + wb), sum(a, b)) << +a << " + " << +b;
      ASSERT_EQ(truncateTo<T>(wa * wb), prod(a, b)) << +a << " * " << +b;
      ASSERT_EQ(std::max(a, b), mx(a, b));
      ASSERT_EQ(std::min(a, b), mn(a, b));
      ASSERT_EQ(truncateTo<T>(wa + wb), avgSum(a, b));
    }
  }
}

// The kernels' element sizes (no nccl.h on the device) are the library's.
TEST(ReduceOps, DeviceTypeSizesMatchTheHostOnes) {
  for (int t = 0; t < ncclNumTypes; t++) {
    EXPECT_EQ(devTypeSize(t), static_cast<int64_t>(dtypeSize(static_cast<ncclDataType_t>(t)))) << "type " << t;
  }
}

TEST(ReduceOps, IntegerSumProdMaxMinAllTypes) {
  checkIntegerOps<int8_t>();
  checkIntegerOps<uint8_t>();
  checkIntegerOps<int32_t>();
  checkIntegerOps<uint32_t>();
  checkIntegerOps<int64_t>();
  checkIntegerOps<uint64_t>();
}

TEST(ReduceOps, IntegerWrapExamples) {
  EXPECT_EQ(int8_t(-56), FuncSum<int8_t>()(100, 100));
  EXPECT_EQ(uint8_t(44), FuncSum<uint8_t>()(200, 100));
  EXPECT_EQ(std::numeric_limits<int32_t>::min(), FuncSum<int32_t>()(std::numeric_limits<int32_t>::max(), 1));
  EXPECT_EQ(int8_t(0), FuncProd<int8_t>()(16, 16));
  EXPECT_EQ(std::numeric_limits<int64_t>::min(), FuncProd<int64_t>()(std::numeric_limits<int64_t>::min(), -1));
  EXPECT_EQ(uint64_t(0), FuncSum<uint64_t>()(~uint64_t(0), 1));
  EXPECT_EQ(int8_t(-128), FuncMin<int8_t>()(-128, 127));
  EXPECT_EQ(uint8_t(255), FuncMax<uint8_t>()(0, 255));
  EXPECT_EQ(int64_t(-1), FuncMax<int64_t>()(std::numeric_limits<int64_t>::min(), -1));
}

template <typename T>
void checkPostDiv(const std::vector<T>& values, const std::vector<uint64_t>& divisors) {
  SCOPED_TRACE(typeid(T).name());
  for (uint64_t d : divisors) {
    const FuncSumPostDiv<T> fn(d);
    for (T x : values) {
      // C's division truncates toward zero; computed in 64 bits with the type's signedness.
      T want;
      if (std::is_signed<T>::value) {
        want = static_cast<T>(static_cast<__int128>(x) / static_cast<__int128>(d));
      } else {
        want = static_cast<T>(static_cast<uint64_t>(x) / d);
      }
      ASSERT_EQ(want, fn.postOp(x)) << +x << " / " << d;
    }
  }
}

TEST(ReduceOps, SumPostDivTruncatesLikeC) {
  std::vector<uint64_t> small;
  for (uint64_t d = 1; d <= 9; ++d) small.push_back(d);
  std::vector<int8_t> all8;
  std::vector<uint8_t> allU8;
  for (int i = 0; i < 256; ++i) {
    all8.push_back(static_cast<int8_t>(i));
    allU8.push_back(static_cast<uint8_t>(i));
  }
  std::vector<uint64_t> div8 = small;
  div8.insert(div8.end(), {127, 128, 255, 1000});
  checkPostDiv(all8, div8);
  checkPostDiv(allU8, div8);
  std::mt19937_64 rng(99);
  std::vector<uint64_t> wide = small;
  wide.insert(wide.end(), {1000, 65537, 0x7fffffffu, 0xffffffffu});
  checkPostDiv(intSamples<int32_t>(rng), wide);
  checkPostDiv(intSamples<uint32_t>(rng), wide);
  wide.insert(wide.end(), {(uint64_t{1} << 40) + 3, uint64_t{1} << 63, ~uint64_t{0}});
  checkPostDiv(intSamples<int64_t>(rng), wide);
  checkPostDiv(intSamples<uint64_t>(rng), wide);
  // Examples: -7 / 2 is -3 (not -4), INT8_MIN / 1 stays, a divisor of 0 counts as 1.
  EXPECT_EQ(int8_t(-3), FuncSumPostDiv<int8_t>(2).postOp(-7));
  EXPECT_EQ(int8_t(-128), FuncSumPostDiv<int8_t>(1).postOp(-128));
  EXPECT_EQ(int32_t(-5), FuncSumPostDiv<int32_t>(0).postOp(-5));
  EXPECT_TRUE(FuncSumPostDiv<int32_t>::kHasPostOp);
  EXPECT_FALSE(FuncSumPostDiv<int32_t>::kHasPreOp);
}

// ---- Floating functors ----
template <typename T>
void checkFloatOps() {
  SCOPED_TRACE(typeid(T).name());
  std::mt19937_64 rng(77 + sizeof(T));
  const std::vector<T> s = floatSamples<T>(rng);
  const FuncSum<T> sum;
  const FuncProd<T> prod;
  const FuncMax<T> mx;
  const FuncMin<T> mn;
  for (T a : s) {
    for (T b : s) {
      const double da = toD(a);
      const double db = toD(b);
      // float and double: one rounding of the exact double result is the IEEE result (double has
      // 53 >= 2*24+2 bits, so rounding twice is harmless for float; double itself is exact here).
      ASSERT_TRUE(sameResult(sum(a, b), roundResult<T>(da + db))) << da << " + " << db;
      ASSERT_TRUE(sameResult(prod(a, b), roundResult<T>(da * db))) << da << " * " << db;
      ASSERT_TRUE(sameResult(mx(a, b), fromD<T>(refMaxMin(da, db, true)), !kZeroSignDefined<T>))
          << da << " max " << db << " bits " << std::hex << bitsU64(a) << " " << bitsU64(b);
      ASSERT_TRUE(sameResult(mn(a, b), fromD<T>(refMaxMin(da, db, false)), !kZeroSignDefined<T>))
          << da << " min " << db;
    }
  }
}

TEST(ReduceOps, FloatingSumProdMaxMinAllTypes) {
  checkFloatOps<__half>();
  checkFloatOps<float>();
  checkFloatOps<double>();
  checkFloatOps<__nv_bfloat16>();
  checkFloatOps<E4m3>();  // exhaustive: all 256 x 256 pairs
  checkFloatOps<E5m2>();
}

template <typename T>
void expectMaxMinSpecials() {
  SCOPED_TRACE(typeid(T).name());
  const T nan = fromD<T>(std::nan(""));
  const T one = fromD<T>(1.0);
  const T two = fromD<T>(-2.0);
  const FuncMax<T> mx;
  const FuncMin<T> mn;
  // One NaN operand is ignored, two give NaN.
  EXPECT_TRUE(sameResult(mx(nan, one), one));
  EXPECT_TRUE(sameResult(mx(one, nan), one));
  EXPECT_TRUE(sameResult(mn(nan, two), two));
  EXPECT_TRUE(sameResult(mn(two, nan), two));
  EXPECT_TRUE(isNan(mx(nan, nan)));
  EXPECT_TRUE(isNan(mn(nan, nan)));
  if constexpr (!std::is_same<T, E4m3>::value) {  // e4m3 has no infinity
    const T inf = fromD<T>(std::numeric_limits<double>::infinity());
    const T ninf = fromD<T>(-std::numeric_limits<double>::infinity());
    EXPECT_TRUE(sameResult(mx(inf, one), inf));
    EXPECT_TRUE(sameResult(mn(ninf, one), ninf));
    EXPECT_TRUE(sameResult(mx(ninf, nan), ninf));
    EXPECT_TRUE(sameResult(mn(nan, inf), inf));
  }
  if constexpr (kZeroSignDefined<T>) {
    const T pz = fromD<T>(0.0);
    const T nz = fromD<T>(-0.0);
    EXPECT_EQ(bitsU64(pz), bitsU64(mx(nz, pz)));
    EXPECT_EQ(bitsU64(pz), bitsU64(mx(pz, nz)));
    EXPECT_EQ(bitsU64(nz), bitsU64(mn(nz, pz)));
    EXPECT_EQ(bitsU64(nz), bitsU64(mn(pz, nz)));
  }
}

TEST(ReduceOps, MaxMinNanAndInfinity) {
  expectMaxMinSpecials<__half>();
  expectMaxMinSpecials<float>();
  expectMaxMinSpecials<double>();
  expectMaxMinSpecials<__nv_bfloat16>();
  expectMaxMinSpecials<E4m3>();
  expectMaxMinSpecials<E5m2>();
}

TEST(ReduceOps, Fp8SaturatesLikeNccl) {
  const E4m3 max4 = fromD<E4m3>(448.0);
  EXPECT_EQ(448.0, toD(FuncSum<E4m3>()(max4, max4)));
  EXPECT_EQ(-448.0, toD(FuncSum<E4m3>()(fromD<E4m3>(-448.0), fromD<E4m3>(-448.0))));
  EXPECT_EQ(448.0, toD(FuncProd<E4m3>()(max4, fromD<E4m3>(2.0))));
  const E5m2 max5 = fromD<E5m2>(57344.0);
  EXPECT_EQ(57344.0, toD(FuncSum<E5m2>()(max5, max5)));
  // Half arithmetic overflows to inf, and SATFINITE turns even a true infinity into the maximum.
  const E5m2 inf5 = BitsOf<E5m2>::from(0x7c);
  ASSERT_TRUE(std::isinf(toD(inf5)));
  EXPECT_EQ(57344.0, toD(FuncSum<E5m2>()(inf5, fromD<E5m2>(1.0))));
  EXPECT_TRUE(isNan(FuncSum<E5m2>()(inf5, BitsOf<E5m2>::from(0xfc))));  // inf + -inf
  EXPECT_TRUE(isNan(FuncSum<E4m3>()(BitsOf<E4m3>::from(0x7f), max4)));  // NaN stays NaN
  // Rounding happens once, in half, then to nearest-even fp8: 1 + 1/16 (a tie) rounds to 1 in e4m3.
  EXPECT_EQ(1.0, toD(FuncSum<E4m3>()(fromD<E4m3>(1.0), fromD<E4m3>(0.0625))));
}

// PreMulSum: preOp(x) = x * scalar (rounded to T; for fp8 through half), reduce = sum.
template <typename T>
void checkPreMulSum(uint64_t scalarBits) {
  using S = typename reduce_detail::Compute<T>::Type;
  const double scalar = toD(BitsOf<S>::from(static_cast<typename BitsOf<S>::U>(scalarBits)));
  SCOPED_TRACE(std::string(typeid(T).name()) + " scalar " + std::to_string(scalar));
  std::mt19937_64 rng(5);
  const FuncPreMulSum<T> fn(scalarBits);
  EXPECT_TRUE(FuncPreMulSum<T>::kHasPreOp);
  EXPECT_FALSE(FuncPreMulSum<T>::kHasPostOp);
  const std::vector<T> s = floatSamples<T>(rng);
  for (T x : s) {
    ASSERT_TRUE(sameResult(fn.preOp(x), roundResult<T>(toD(x) * scalar))) << toD(x);
    ASSERT_TRUE(sameResult(fn.postOp(x), x));
  }
  for (size_t i = 0; i + 1 < s.size(); i += 7) {
    ASSERT_TRUE(sameResult(fn(s[i], s[i + 1]), FuncSum<T>()(s[i], s[i + 1])));
  }
}

template <typename T>
void checkPreMulSumScalars(ncclDataType_t dtype, double extra) {
  for (int n = 1; n <= 8; ++n) checkPreMulSum<T>(avgScalarBits(dtype, n));
  using S = typename reduce_detail::Compute<T>::Type;
  checkPreMulSum<T>(BitsOf<S>::to(fromD<S>(extra)));
}

TEST(ReduceOps, PreMulSumAllFloatingTypes) {
  checkPreMulSumScalars<__half>(ncclFloat16, -2.5);
  checkPreMulSumScalars<float>(ncclFloat32, 0.3);
  checkPreMulSumScalars<double>(ncclFloat64, 0.3);
  checkPreMulSumScalars<__nv_bfloat16>(ncclBfloat16, 3.75);
  checkPreMulSumScalars<E4m3>(ncclFloat8e4m3, 0.3);
  checkPreMulSumScalars<E5m2>(ncclFloat8e5m2, -1.7);
}

TEST(ReduceOps, PreMulSumOnIntegersWraps) {
  const FuncPreMulSum<uint8_t> fn(3);
  EXPECT_EQ(uint8_t(44), fn.preOp(100));  // 300 mod 256
  const FuncPreMulSum<int32_t> neg(static_cast<uint32_t>(-2));
  EXPECT_EQ(int32_t(-14), neg.preOp(7));
}

// ---- ncclAvg scalars ----
TEST(AvgScalar, EveryTypeAndRankCount) {
  for (int n = 1; n <= 8; ++n) {
    SCOPED_TRACE(n);
    const double inv = 1.0 / n;
    const float invF = static_cast<float>(inv);
    EXPECT_EQ(bitsU64(__float2half(invF)), avgScalarBits(ncclFloat16, n));
    EXPECT_EQ(bitsU64(__float2bfloat16(invF)), avgScalarBits(ncclBfloat16, n));
    EXPECT_EQ(bitsU64(invF), avgScalarBits(ncclFloat32, n));
    EXPECT_EQ(bitsU64(inv), avgScalarBits(ncclFloat64, n));
    // fp8: the value of 1/n rounded to fp8, given as half bits. Checked against the fp8 value
    // nearest 1/n, found by search over all 256 encodings (ties to even mantissa).
    for (int variant = 0; variant < 2; ++variant) {
      double best = 0;
      for (int b = 0; b < 256; ++b) {
        const double v = variant == 0 ? toD(BitsOf<E4m3>::from(static_cast<uint8_t>(b)))
                                      : toD(BitsOf<E5m2>::from(static_cast<uint8_t>(b)));
        if (std::isnan(v) || std::isinf(v)) continue;
        const double err = std::fabs(v - invF);
        const double bestErr = std::fabs(best - invF);
        if (err < bestErr || (err == bestErr && (b & 1) == 0 && v != best)) best = v;
      }
      const uint64_t bits = avgScalarBits(variant == 0 ? ncclFloat8e4m3 : ncclFloat8e5m2, n);
      EXPECT_EQ(best, toD(BitsOf<__half>::from(static_cast<uint16_t>(bits)))) << "variant " << variant;
      EXPECT_EQ(0u, bits >> 16);
    }
    for (ncclDataType_t t : {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64}) {
      EXPECT_EQ(static_cast<uint64_t>(n), avgScalarBits(t, n));
    }
  }
  EXPECT_EQ(0x3555u, avgScalarBits(ncclFloat16, 3));                 // 0.33325
  EXPECT_EQ(0x3580u, avgScalarBits(ncclFloat8e4m3, 3));              // 0.34375 as half
  EXPECT_EQ(0x3c00u, avgScalarBits(ncclFloat8e5m2, 1));              // 1.0 as half
  EXPECT_EQ(0u, avgScalarBits(ncclFloat32, 0));                      // invalid rank count
  EXPECT_EQ(0u, avgScalarBits(static_cast<ncclDataType_t>(12), 4));  // invalid type
}

// ncclRedOpCreatePreMulSum scalars: their own bits, fp8 widened to half (every fp8 encoding).
TEST(PreMulScalar, OwnBitsAndFp8AsHalf) {
  EXPECT_EQ(bitsU64(2.5f), preMulScalarBits(ncclFloat32, bitsU64(2.5f)));
  EXPECT_EQ(bitsU64(-0.1), preMulScalarBits(ncclFloat64, bitsU64(-0.1)));
  EXPECT_EQ(bitsU64(__float2half(3.0f)), preMulScalarBits(ncclFloat16, bitsU64(__float2half(3.0f))));
  EXPECT_EQ(0xfeu, preMulScalarBits(ncclInt8, 0xfe));  // -2: the kernel multiplies the low byte
  for (int b = 0; b < 256; ++b) {
    const double e4m3 = toD(BitsOf<E4m3>::from(static_cast<uint8_t>(b)));
    const double e5m2 = toD(BitsOf<E5m2>::from(static_cast<uint8_t>(b)));
    const double asHalf4 = toD(BitsOf<__half>::from(static_cast<uint16_t>(preMulScalarBits(ncclFloat8e4m3, b))));
    const double asHalf5 = toD(BitsOf<__half>::from(static_cast<uint16_t>(preMulScalarBits(ncclFloat8e5m2, b))));
    if (!std::isnan(e4m3)) EXPECT_EQ(e4m3, asHalf4) << "e4m3 " << b;
    if (!std::isnan(e5m2)) EXPECT_EQ(e5m2, asHalf5) << "e5m2 " << b;
  }
}
}  // namespace
}  // namespace braid
