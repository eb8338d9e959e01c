// Host-side reference for collective tests: the per-rank input of any (seed, rank, index) computed
// without communication, the expected output of every collective, and exact or toleranced
// comparison per datatype. Header-only, so every *_test.cc of tests/gpu can use it without a CMake
// change. Uses nothing of Braid but nccl.h, so the same tests check NVIDIA's NCCL.
//
// Inputs and tolerances (what a failure means):
//  - Integer types: inputs are random bits. Sum and Prod wrap (unsigned arithmetic of the type's
//    width), Max/Min compare in the type's signedness, Avg is the wrapped sum read in the type,
//    divided by nranks and truncated toward zero. Compared exactly.
//  - Float types, InputKind::kExact: small integers, chosen so that every partial result (any
//    order of reduction, with or without a pre-multiplication by 1/nranks) is exactly
//    representable in fp8 e5m2, the narrowest type, for nranks <= 8: Sum/Max/Min in [-2, 2]
//    ([-1, 1] above 4 ranks), Prod in {-2, -1, 1, 2}, Avg nranks times those. Sum/Prod/Max/Min
//    are compared exactly; Avg may differ by one ulp of the type (an implementation may divide
//    before or after summing).
//  - Float types, InputKind::kReal: uniform reals in [0.5, 1.5); Max/Min exact, the others within
//    a relative error of 1e-5 * nranks (float, half...) or 1e-12 * nranks (double).
//  - +0 and -0 compare equal; copies (Broadcast, AllGather, untouched input) compare bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "util/dtype.h"

namespace colltest {

// Poison byte written over every output (and the guard after it) before each operation.
constexpr unsigned char kPoison = 0xAB;
// Bytes after the expected output that must stay poisoned.
constexpr size_t kGuardBytes = 256;

// True when the tests run against NVIDIA's library (BRAID_GPU_TESTS_REFERENCE=1): expectations
// that only Braid promises (argument checks NCCL does not do, Braid's message wording) are skipped.
inline bool againstReference() {
  const char* v = std::getenv("BRAID_GPU_TESTS_REFERENCE");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

// Sets an environment variable for the life of the object, restoring the old value afterwards.
// Used in the gtest process before forking, so that every rank sees it before its first NCCL call.
class ScopedSetenv {
 public:
  ScopedSetenv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    hadOld_ = old != nullptr;
    if (hadOld_) old_ = old;
    setenv(name, value, 1);
  }
  ScopedSetenv(const ScopedSetenv&) = delete;
  ScopedSetenv& operator=(const ScopedSetenv&) = delete;
  ~ScopedSetenv() {
    if (hadOld_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool hadOld_ = false;
};

enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
enum class InputKind { kExact, kReal };

inline const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "AllReduce";
    case Coll::kBroadcast:
      return "Broadcast";
    case Coll::kReduce:
      return "Reduce";
    case Coll::kAllGather:
      return "AllGather";
    case Coll::kReduceScatter:
      return "ReduceScatter";
  }
  return "?";
}
inline bool collReduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }
inline bool collHasRoot(Coll c) { return c == Coll::kBroadcast || c == Coll::kReduce; }

inline const char* typeName(ncclDataType_t t) {
  static const char* const kNames[] = {"int8", "uint8", "int32",  "uint32",   "int64",   "uint64",
                                       "half", "float", "double", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return (t >= 0 && t < ncclNumTypes) ? kNames[t] : "?";
}
inline const char* opName(ncclRedOp_t op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};
  return (op >= 0 && op < ncclNumOps) ? kNames[op] : "?";
}

// splitmix64's finalizer: a cheap, well-mixed hash, so that each rank can compute every other
// rank's input element without communication.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t inputHash(uint64_t seed, int rank, size_t index) {
  return mix64(seed ^ mix64((static_cast<uint64_t>(rank) << 48) ^ static_cast<uint64_t>(index)));
}

// What a case feeds every rank: all inputs derive from (seed, rank, index of the send buffer).
struct InputSpec {
  uint64_t seed;
  int nranks;
  ncclRedOp_t op;
  InputKind kind;
};

// The real value of a float-typed input (before rounding to the type; kExact values are exact).
inline double floatInputValue(const InputSpec& in, int rank, size_t index) {
  uint64_t h = inputHash(in.seed, rank, index);
  if (in.kind == InputKind::kReal) return 0.5 + static_cast<double>(h >> 11) * 0x1.0p-53;
  static const double kProd[] = {-2.0, -1.0, 1.0, 2.0};
  if (in.op == ncclProd) return kProd[h & 3];
  // Partial sums must stay within [-8, 8], e5m2's exact integers: [-2, 2] on 4 ranks, [-1, 1] on 8.
  const int reach = in.nranks <= 4 ? 2 : 1;
  double small = static_cast<double>(static_cast<int>(h % (2 * reach + 1)) - reach);
  return in.op == ncclAvg ? small * in.nranks : small;
}

// ---- Per-datatype traits: storage, conversion, arithmetic --------------------------------------

template <typename U, typename S>
struct IntType {
  using Store = U;   // unsigned storage: arithmetic on it wraps
  using Signed = S;  // how Max/Min/Avg read the bits
  static constexpr bool kFloat = false;
};
template <typename U>
struct FloatTypeBase {
  using Store = U;
  static constexpr bool kFloat = true;
  static constexpr int kBits = 8 * sizeof(U);
};
struct F16 : FloatTypeBase<uint16_t> {
  static Store fromDouble(double v) {
    __half_raw r = __float2half_rn(static_cast<float>(v));
    return r.x;
  }
  static double toDouble(Store s) {
    __half_raw r;
    r.x = s;
    return __half2float(__half(r));
  }
};
struct BF16 : FloatTypeBase<uint16_t> {
  static Store fromDouble(double v) {
    __nv_bfloat16_raw r = __float2bfloat16_rn(static_cast<float>(v));
    return r.x;
  }
  static double toDouble(Store s) {
    __nv_bfloat16_raw r;
    r.x = s;
    return __bfloat162float(__nv_bfloat16(r));
  }
};
template <__nv_fp8_interpretation_t kInterp>
struct F8 : FloatTypeBase<uint8_t> {
  static Store fromDouble(double v) { return __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE, kInterp); }
  static double toDouble(Store s) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(s, kInterp))); }
};
struct F32 : FloatTypeBase<uint32_t> {
  static Store fromDouble(double v) {
    float f = static_cast<float>(v);
    Store s;
    std::memcpy(&s, &f, sizeof(s));
    return s;
  }
  static double toDouble(Store s) {
    float f;
    std::memcpy(&f, &s, sizeof(f));
    return f;
  }
};
struct F64 : FloatTypeBase<uint64_t> {
  static Store fromDouble(double v) {
    Store s;
    std::memcpy(&s, &v, sizeof(s));
    return s;
  }
  static double toDouble(Store s) {
    double d;
    std::memcpy(&d, &s, sizeof(d));
    return d;
  }
};

// Calls fn(Traits{}) with the traits of datatype t.
template <typename Fn>
auto dispatchType(ncclDataType_t t, Fn&& fn) {
  switch (t) {
    case ncclInt8:
      return fn(IntType<uint8_t, int8_t>{});
    case ncclUint8:
      return fn(IntType<uint8_t, uint8_t>{});
    case ncclInt32:
      return fn(IntType<uint32_t, int32_t>{});
    case ncclUint32:
      return fn(IntType<uint32_t, uint32_t>{});
    case ncclInt64:
      return fn(IntType<uint64_t, int64_t>{});
    case ncclUint64:
      return fn(IntType<uint64_t, uint64_t>{});
    case ncclFloat16:
      return fn(F16{});
    case ncclFloat32:
      return fn(F32{});
    case ncclFloat64:
      return fn(F64{});
    case ncclBfloat16:
      return fn(BF16{});
    case ncclFloat8e4m3:
      return fn(F8<__NV_E4M3>{});
    default:
      return fn(F8<__NV_E5M2>{});
  }
}

// The bits of input (rank, index), as stored in the send buffer.
template <typename T>
typename T::Store inputBits(const InputSpec& in, int rank, size_t index) {
  if constexpr (T::kFloat) {
    return T::fromDouble(floatInputValue(in, rank, index));
  } else {
    return static_cast<typename T::Store>(inputHash(in.seed, rank, index));
  }
}

// The value a rank's float input really has (rounded to the type for kReal inputs).
template <typename T>
double inputValue(const InputSpec& in, int rank, size_t index) {
  double v = floatInputValue(in, rank, index);
  return in.kind == InputKind::kExact ? v : T::toDouble(T::fromDouble(v));
}

// Reduction over all ranks of the input at `index`, integer types: exact, wrapping.
template <typename T>
typename T::Store reduceInts(const InputSpec& in, size_t index) {
  using U = typename T::Store;
  using S = typename T::Signed;
  U acc = inputBits<T>(in, 0, index);
  for (int r = 1; r < in.nranks; r++) {
    U v = inputBits<T>(in, r, index);
    switch (in.op) {
      case ncclProd:
        acc = static_cast<U>(static_cast<uint64_t>(acc) * v);
        break;
      case ncclMax:
        acc = static_cast<S>(v) > static_cast<S>(acc) ? v : acc;
        break;
      case ncclMin:
        acc = static_cast<S>(v) < static_cast<S>(acc) ? v : acc;
        break;
      default:
        acc = static_cast<U>(acc + v);
        break;  // Sum and Avg
    }
  }
  if (in.op == ncclAvg) {
    if constexpr (std::is_signed<S>::value) {
      // Division of the signed reading truncates toward zero, in C++ as in NCCL.
      acc = static_cast<U>(static_cast<int64_t>(static_cast<S>(acc)) / in.nranks);
    } else {
      acc = static_cast<U>(acc / static_cast<U>(in.nranks));
    }
  }
  return acc;
}

// Reduction over all ranks of the input at `index`, float types, in double (exact for kExact).
template <typename T>
double reduceFloats(const InputSpec& in, size_t index) {
  double acc = inputValue<T>(in, 0, index);
  for (int r = 1; r < in.nranks; r++) {
    double v = inputValue<T>(in, r, index);
    switch (in.op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  return in.op == ncclAvg ? acc / in.nranks : acc;
}

// A monotonic integer image of a float's bits (sign-magnitude to two's complement): neighbours
// differ by one, and +0 and -0 both map to 0.
template <typename T>
int64_t orderedKey(typename T::Store bits) {
  uint64_t b = bits;
  uint64_t sign = (b >> (T::kBits - 1)) & 1;
  auto mag = static_cast<int64_t>(b & ((uint64_t{1} << (T::kBits - 1)) - 1));
  return sign != 0 ? -mag : mag;
}

// Checks one reduced element; on a mismatch fills `expected`/`got` with printable text.
template <typename T>
bool checkReduced(const InputSpec& in, size_t index, typename T::Store got, std::string* expected,
                  std::string* gotText) {
  char buf[64];
  if constexpr (!T::kFloat) {
    typename T::Store want = reduceInts<T>(in, index);
    if (got == want) return true;
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(static_cast<typename T::Signed>(want)));
    *expected = buf;
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(static_cast<typename T::Signed>(got)));
    *gotText = buf;
    return false;
  } else {
    double want = reduceFloats<T>(in, index);
    bool ok;
    if (in.kind == InputKind::kReal && in.op != ncclMax && in.op != ncclMin) {
      double tol = (sizeof(typename T::Store) == 8 ? 1e-12 : 1e-5) * in.nranks;
      ok = std::fabs(T::toDouble(got) - want) <= tol * std::fabs(want);
    } else {
      int64_t diff = orderedKey<T>(got) - orderedKey<T>(T::fromDouble(want));
      ok = diff == 0 || (in.op == ncclAvg && (diff == 1 || diff == -1));
    }
    if (ok) return true;
    std::snprintf(buf, sizeof(buf), "%.17g", want);
    *expected = buf;
    std::snprintf(buf, sizeof(buf), "%.17g (bits 0x%llx)", T::toDouble(got), static_cast<unsigned long long>(got));
    *gotText = buf;
    return false;
  }
}

// Checks one copied element (bit for bit) against input (srcRank, srcIndex).
template <typename T>
bool checkCopied(const InputSpec& in, int srcRank, size_t srcIndex, typename T::Store got, std::string* expected,
                 std::string* gotText) {
  typename T::Store want = inputBits<T>(in, srcRank, srcIndex);
  if (got == want) return true;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0x%llx (input of rank %d [%zu])", static_cast<unsigned long long>(want), srcRank,
                srcIndex);
  *expected = buf;
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(got));
  *gotText = buf;
  return false;
}

}  // namespace colltest
