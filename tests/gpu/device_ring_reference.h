// Host reference of device_ring_test.cu: element values as raw bits, conversions of the 12 types
// to and from double, the inputs (ranges that keep Sum/Prod/Max/Min exact in every type), and the
// reduction a rank's output is compared with.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "util/dtype.h"

namespace braid {
namespace devtest {

inline bool isFloat(ncclDataType_t t) { return t >= ncclFloat16; }
inline bool isSigned(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

// ---- element values: raw bits <-> double, per type

inline uint64_t getBits(const uint8_t* p, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  return v;
}
inline void setBits(uint8_t* p, size_t size, uint64_t v) { std::memcpy(p, &v, size); }

inline double decodeFloat(ncclDataType_t t, uint64_t bits) {
  switch (t) {
    case ncclFloat16: {
      __half_raw h;
      h.x = static_cast<uint16_t>(bits);
      return __half2float(__half(h));
    }
    case ncclBfloat16: {
      __nv_bfloat16_raw h;
      h.x = static_cast<uint16_t>(bits);
      return __bfloat162float(__nv_bfloat16(h));
    }
    case ncclFloat32: {
      float f;
      uint32_t u = static_cast<uint32_t>(bits);
      std::memcpy(&f, &u, 4);
      return f;
    }
    case ncclFloat64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    case ncclFloat8e4m3: {
      __nv_fp8_e4m3 x;
      x.__x = static_cast<uint8_t>(bits);
      return static_cast<float>(x);
    }
    default: {
      __nv_fp8_e5m2 x;
      x.__x = static_cast<uint8_t>(bits);
      return static_cast<float>(x);
    }
  }
}

inline uint64_t encodeFloat(ncclDataType_t t, double v) {
  switch (t) {
    case ncclFloat16:
      return static_cast<__half_raw>(__float2half_rn(static_cast<float>(v))).x;
    case ncclBfloat16:
      return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(static_cast<float>(v))).x;
    case ncclFloat32: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    case ncclFloat64: {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      return u;
    }
    case ncclFloat8e4m3:
      return __nv_fp8_e4m3(static_cast<float>(v)).__x;
    default:
      return __nv_fp8_e5m2(static_cast<float>(v)).__x;
  }
}

inline uint64_t maskBits(ncclDataType_t t, uint64_t v) {
  const size_t bits = 8 * dtypeSize(t);
  return bits == 64 ? v : (v & ((uint64_t{1} << bits) - 1));
}
inline int64_t signExtend(ncclDataType_t t, uint64_t v) {
  const int shift = 64 - 8 * static_cast<int>(dtypeSize(t));
  return static_cast<int64_t>(v << shift) >> shift;
}

// ---- inputs

struct Rng {
  uint64_t state;
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

// One input element; ranges keep every partial result exact (see the file comment of the test).
inline uint64_t genInput(Rng& rng, ncclDataType_t t, ncclRedOp_t op, bool preMul) {
  const bool wide = dtypeSize(t) >= 4;
  if (!isFloat(t)) {
    if (op == ncclMax || op == ncclMin) return maskBits(t, rng.next());
    if (op == ncclProd) return maskBits(t, static_cast<uint64_t>(isSigned(t) ? rng.range(-1, 2) : rng.range(1, 2)));
    if (op == ncclAvg) {
      const int64_t lim = wide ? 1000 : 15;
      return maskBits(t, static_cast<uint64_t>(isSigned(t) ? rng.range(-lim, lim) : rng.range(0, 4 * lim)));
    }
    return maskBits(t, static_cast<uint64_t>(isSigned(t) ? rng.range(-4, 4) : rng.range(0, 8)));
  }
  if (op == ncclMax || op == ncclMin) {
    if (t == ncclFloat32 || t == ncclFloat64)
      return encodeFloat(t, static_cast<double>(rng.range(-100000, 100000)) / 7.0);
    return encodeFloat(t, static_cast<double>(rng.range(-100, 100)) / 4.0);
  }
  if (op == ncclProd) {
    int64_t v = rng.range(-1, 2);
    if (v == 0) v = 1;
    return encodeFloat(t, static_cast<double>(v));
  }
  (void)preMul;
  const int64_t lim = t == ncclFloat8e5m2 ? 1 : (t == ncclFloat8e4m3 ? 2 : 4);
  return encodeFloat(t, static_cast<double>(rng.range(-lim, lim)));
}

// ---- reference

struct RefOp {
  ncclDataType_t dtype;
  ncclRedOp_t op;
  bool preMul;    // PreMulSum (floats: Avg or a custom factor)
  double factor;  // the PreMulSum factor as the device sees it
  int nranks;
  double tolerance;  // 0: bit-exact
};

inline uint64_t reduceRef(const RefOp& R, const uint64_t* v, int count) {
  const ncclDataType_t t = R.dtype;
  if (!isFloat(t)) {
    uint64_t acc = v[0];
    for (int i = 1; i < count; i++) {
      switch (R.op) {
        case ncclProd:
          acc = acc * v[i];
          break;
        case ncclMax:
          acc = isSigned(t) ? (signExtend(t, v[i]) > signExtend(t, acc) ? v[i] : acc) : (v[i] > acc ? v[i] : acc);
          break;
        case ncclMin:
          acc = isSigned(t) ? (signExtend(t, v[i]) < signExtend(t, acc) ? v[i] : acc) : (v[i] < acc ? v[i] : acc);
          break;
        default:  // Sum and Avg
          acc = acc + v[i];
          break;
      }
      acc = maskBits(t, acc);
    }
    if (R.op == ncclAvg) {
      if (isSigned(t)) return maskBits(t, static_cast<uint64_t>(signExtend(t, acc) / R.nranks));
      return acc / static_cast<uint64_t>(R.nranks);
    }
    return acc;
  }
  double acc = 0;
  for (int i = 0; i < count; i++) {
    double x = decodeFloat(t, v[i]);
    if (R.preMul) x *= R.factor;
    if (i == 0) {
      acc = x;
    } else if (R.op == ncclProd) {
      acc *= x;
    } else if (R.op == ncclMax) {
      acc = x > acc ? x : acc;
    } else if (R.op == ncclMin) {
      acc = x < acc ? x : acc;
    } else {
      acc += x;
    }
  }
  return encodeFloat(t, acc);
}

// Tolerance of Avg/PreMulSum results (inputs of magnitude <= 4): a few roundings of T.
inline double avgTolerance(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
      return 0.02;
    case ncclBfloat16:
      return 0.15;
    case ncclFloat32:
      return 1e-5;
    case ncclFloat64:
      return 1e-12;
    default:
      return 0.6;  // fp8
  }
}

inline bool sameElement(const RefOp& R, uint64_t expect, uint64_t got, bool isOutput) {
  if (expect == got) return true;
  if (!isOutput || R.tolerance == 0) return false;
  const double e = decodeFloat(R.dtype, expect);
  const double g = decodeFloat(R.dtype, got);
  return std::fabs(e - g) <= R.tolerance;
}

}  // namespace devtest
}  // namespace braid
