// The (type, op) dispatch (visitTypeOp) and the pack helpers of src/device/reduce/: every pair
// mapped to its functor and invalid ones refused; every pack instantiation against the scalar
// functor on the host, and the same packs on a GPU, when there is one, against the host results.
#include "reduce_test_util.h"

namespace braid {
namespace {

using namespace reduce_test;

// ---- Dispatch ----
struct RecordingVisitor {
  int calls = 0;
  std::string fn;
  bool eltMatches = false;
  template <typename T, typename Fn>
  void run() {
    ++calls;
    fn = typeid(Fn).name();
    eltMatches = std::is_same<T, typename Fn::EltType>::value;
  }
};

template <typename Fn>
std::string nameOf() {
  return typeid(Fn).name();
}

template <typename S, typename U>
std::vector<std::string> integerRow() {
  return {nameOf<FuncSum<U>>(), nameOf<FuncProd<U>>(),      nameOf<FuncMax<S>>(),
          nameOf<FuncMin<S>>(), nameOf<FuncPreMulSum<U>>(), nameOf<FuncSumPostDiv<S>>()};
}
template <typename T>
std::vector<std::string> floatRow() {
  return {nameOf<FuncSum<T>>(), nameOf<FuncProd<T>>(),      nameOf<FuncMax<T>>(),
          nameOf<FuncMin<T>>(), nameOf<FuncPreMulSum<T>>(), ""};
}

TEST(ReduceDispatch, MapsEveryPairAndRefusesInvalidOnes) {
  const std::vector<std::vector<std::string>> want = {integerRow<int8_t, uint8_t>(),
                                                      integerRow<uint8_t, uint8_t>(),
                                                      integerRow<int32_t, uint32_t>(),
                                                      integerRow<uint32_t, uint32_t>(),
                                                      integerRow<int64_t, uint64_t>(),
                                                      integerRow<uint64_t, uint64_t>(),
                                                      floatRow<__half>(),
                                                      floatRow<float>(),
                                                      floatRow<double>(),
                                                      floatRow<__nv_bfloat16>(),
                                                      floatRow<E4m3>(),
                                                      floatRow<E5m2>()};
  std::set<std::string> distinct;
  for (int t = 0; t < kDevNumTypes; ++t) {
    for (int op = 0; op < 6; ++op) {
      RecordingVisitor v;
      const bool ok = visitTypeOpHost(t, op, v);
      const std::string& expect = want[t][op];
      EXPECT_EQ(!expect.empty(), ok) << "type " << t << " op " << op;
      EXPECT_EQ(ok ? 1 : 0, v.calls);
      if (!ok) continue;
      EXPECT_EQ(expect, v.fn) << "type " << t << " op " << op;
      EXPECT_TRUE(v.eltMatches);
      distinct.insert(v.fn);
    }
  }
  EXPECT_EQ(57u, distinct.size());
  for (auto [t, op] : std::vector<std::pair<int, int>>{{-1, 0}, {12, 0}, {255, 1}, {7, -1}, {7, 6}, {0, 100}}) {
    RecordingVisitor v;
    EXPECT_FALSE(visitTypeOpHost(t, op, v)) << t << "," << op;
    EXPECT_EQ(0, v.calls);
  }
}

// ---- Pack helpers ----
template <typename T>
::testing::AssertionResult laneSame(T got, T want) {
  if constexpr (std::is_integral<T>::value) {
    if (got == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << +got << " want " << +want;
  } else {
    return sameResult(got, want);
  }
}

template <typename T, typename Pack>
std::vector<T> lanesOf(const Pack& p) {
  using U = typename BitsOf<T>::U;
  U raw[sizeof(Pack) / sizeof(T)];
  memcpy(raw, &p, sizeof(Pack));
  std::vector<T> out;
  for (U u : raw) out.push_back(BitsOf<T>::from(u));
  return out;
}

template <typename Pack>
Pack randomPack(std::mt19937_64& rng) {
  uint64_t words[sizeof(Pack) / 8];
  for (uint64_t& w : words) w = rng();
  Pack p;
  memcpy(&p, words, sizeof(Pack));
  return p;
}

// The scalar each (type, op) gets in the pack and GPU tests: ncclAvg over 3 ranks.
uint64_t testScalar(int dtype) { return avgScalarBits(static_cast<ncclDataType_t>(dtype), 3); }

// Every lane of applyReduce/applyPreOp/applyPostOp equals the scalar functor on that lane.
template <typename Pack>
struct PackCheckVisitor {
  uint64_t scalar;
  std::mt19937_64 rng{42};
  template <typename T, typename Fn>
  void run() {
    SCOPED_TRACE(std::string(typeid(Fn).name()) + " pack of " + std::to_string(sizeof(Pack)));
    const Fn fn(scalar);
    for (int iter = 0; iter < 3000; ++iter) {
      const Pack a = randomPack<Pack>(rng);
      const Pack b = randomPack<Pack>(rng);
      const std::vector<T> la = lanesOf<T>(a);
      const std::vector<T> lb = lanesOf<T>(b);
      const std::vector<T> red = lanesOf<T>(applyReduce<Fn, T>(fn, a, b));
      const std::vector<T> pre = lanesOf<T>(applyPreOp<Fn, T>(fn, a));
      const std::vector<T> post = lanesOf<T>(applyPostOp<Fn, T>(fn, a));
      for (size_t i = 0; i < la.size(); ++i) {
        ASSERT_TRUE(laneSame(red[i], fn(la[i], lb[i]))) << "reduce lane " << i;
        ASSERT_TRUE(laneSame(pre[i], fn.preOp(la[i]))) << "preOp lane " << i;
        ASSERT_TRUE(laneSame(post[i], fn.postOp(la[i]))) << "postOp lane " << i;
      }
    }
  }
};

TEST(ReducePacks, EveryInstantiationMatchesScalarFunctor) {
  for (int t = 0; t < kDevNumTypes; ++t) {
    for (int op = 0; op < 6; ++op) {
      PackCheckVisitor<uint64_t> v64{testScalar(t)};
      PackCheckVisitor<uint4> v128{testScalar(t)};
      if (!visitTypeOpHost(t, op, v64)) continue;
      ASSERT_TRUE(visitTypeOpHost(t, op, v128));
    }
  }
}

TEST(ReducePacks, SignedTypesShareUnsignedSumBits) {
  // The dispatch runs int8/int32/int64 Sum and Prod on the unsigned functors; the bits must agree.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint4 a = randomPack<uint4>(rng);
    const uint4 b = randomPack<uint4>(rng);
    const uint4 s = applyReduce<FuncSum<int8_t>, int8_t>(FuncSum<int8_t>(), a, b);
    const uint4 u = applyReduce<FuncSum<uint8_t>, uint8_t>(FuncSum<uint8_t>(), a, b);
    ASSERT_EQ(0, memcmp(&s, &u, sizeof(uint4)));
    const uint4 sp = applyReduce<FuncProd<int32_t>, int32_t>(FuncProd<int32_t>(), a, b);
    const uint4 up = applyReduce<FuncProd<uint32_t>, uint32_t>(FuncProd<uint32_t>(), a, b);
    ASSERT_EQ(0, memcmp(&sp, &up, sizeof(uint4)));
    const uint64_t s64 =
        applyReduce<FuncProd<int64_t>, int64_t>(FuncProd<int64_t>(), a.x | uint64_t{a.y} << 32, ~uint64_t{0});
    const uint64_t u64 =
        applyReduce<FuncProd<uint64_t>, uint64_t>(FuncProd<uint64_t>(), a.x | uint64_t{a.y} << 32, ~uint64_t{0});
    ASSERT_EQ(s64, u64);
  }
}

// ---- The same pack helpers on a GPU ----
struct ApplyVisitor {
  uint64_t scalar;
  int n;  // uint4 packs per input
  const uint4* a;
  const uint4* b;
  uint4* out;  // 3n uint4 results (reduce, preOp, postOp), then 3 * 2n uint64_t results
  template <typename T, typename Fn>
  __host__ __device__ void run() {
    const Fn fn(scalar);
    const auto* a64 = reinterpret_cast<const uint64_t*>(a);
    const auto* b64 = reinterpret_cast<const uint64_t*>(b);
    auto* out64 = reinterpret_cast<uint64_t*>(out + 3 * n);
#if defined(__CUDA_ARCH__)
    const int first = static_cast<int>(threadIdx.x);
    const int stride = static_cast<int>(blockDim.x);
#else
    const int first = 0;
    const int stride = 1;
#endif
    for (int i = first; i < n; i += stride) {
      out[i] = applyReduce<Fn, T>(fn, a[i], b[i]);
      out[n + i] = applyPreOp<Fn, T>(fn, a[i]);
      out[2 * n + i] = applyPostOp<Fn, T>(fn, a[i]);
    }
    for (int i = first; i < 2 * n; i += stride) {
      out64[i] = applyReduce<Fn, T>(fn, a64[i], b64[i]);
      out64[2 * n + i] = applyPreOp<Fn, T>(fn, a64[i]);
      out64[4 * n + i] = applyPostOp<Fn, T>(fn, a64[i]);
    }
  }
};

__global__ void applyKernel(int dtype, int redOp, ApplyVisitor v) { visitTypeOp(dtype, redOp, v); }

// Compares the device's results with the host's, lane by lane as T.
struct CompareVisitor {
  const std::vector<uint4>* host;
  const std::vector<uint4>* device;
  template <typename T, typename Fn>
  void run() {
    SCOPED_TRACE(typeid(Fn).name());
    for (size_t i = 0; i < host->size(); ++i) {
      const std::vector<T> h = lanesOf<T>((*host)[i]);
      const std::vector<T> d = lanesOf<T>((*device)[i]);
      for (size_t l = 0; l < h.size(); ++l) ASSERT_TRUE(laneSame(d[l], h[l])) << "pack " << i << " lane " << l;
    }
  }
};

TEST(ReducePacks, DeviceMatchesHost) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    GTEST_SKIP() << "no CUDA device: the device side of the pack helpers is not checked";
  }
  constexpr int kPacks = 4096;
  std::mt19937_64 rng(11);
  std::vector<uint4> a(kPacks), b(kPacks);
  for (int i = 0; i < kPacks; ++i) {
    a[i] = randomPack<uint4>(rng);
    b[i] = randomPack<uint4>(rng);
  }
  uint4* devA = nullptr;
  uint4* devB = nullptr;
  uint4* devOut = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&devA, kPacks * sizeof(uint4)));
  ASSERT_EQ(cudaSuccess, cudaMalloc(&devB, kPacks * sizeof(uint4)));
  ASSERT_EQ(cudaSuccess, cudaMalloc(&devOut, 6 * kPacks * sizeof(uint4)));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(devA, a.data(), kPacks * sizeof(uint4), cudaMemcpyHostToDevice));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(devB, b.data(), kPacks * sizeof(uint4), cudaMemcpyHostToDevice));
  int checked = 0;
  for (int t = 0; t < kDevNumTypes; ++t) {
    for (int op = 0; op < 6; ++op) {
      std::vector<uint4> host(6 * kPacks), device(6 * kPacks);
      ApplyVisitor hv{testScalar(t), kPacks, a.data(), b.data(), host.data()};
      if (!visitTypeOpHost(t, op, hv)) continue;
      ApplyVisitor dv{testScalar(t), kPacks, devA, devB, devOut};
      applyKernel<<<1, 256>>>(t, op, dv);
      ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize()) << "type " << t << " op " << op;
      ASSERT_EQ(cudaSuccess, cudaMemcpy(device.data(), devOut, device.size() * sizeof(uint4), cudaMemcpyDeviceToHost));
      CompareVisitor cmp{&host, &device};
      ASSERT_TRUE(visitTypeOpHost(t, op, cmp));
      ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "type " << t << " op " << op;
      ++checked;
    }
  }
  // Valid (type, op) pairs: Sum, Prod, Max, Min and PreMulSum on all 12 types, SumPostDiv on the 6
  // integer types; signed Sum/Prod run the unsigned instantiations.
  EXPECT_EQ(12 * 5 + 6, checked);
  cudaFree(devA);
  cudaFree(devB);
  cudaFree(devOut);
}
}  // namespace
}  // namespace braid
