#include "coll_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace braidperf {
namespace {

constexpr double kValueCap = 100;  // pattern integers stay small: exact, and readable in a dump
constexpr double kMinMaxCap = 64;  // below 91, so int8 min/max values never equal kPoison (-91)

// A well-mixed small hash of (rank, k): neighbouring elements and ranks get unrelated values.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Integer reduction with the wrap-around of the element type (NCCL reduces signed integers with
// the unsigned functions, so products wrap modulo 2^bits).
uint64_t reduceIntBits(const TypeInfo& t, ncclRedOp_t op, const std::vector<double>& vals) {
  const int bits = static_cast<int>(t.size * 8);
  const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  int64_t lo = static_cast<int64_t>(vals[0]), hi = lo, sum = 0;
  uint64_t prod = 1;
  for (double v : vals) {
    int64_t x = static_cast<int64_t>(v);
    sum += x;
    prod *= static_cast<uint64_t>(x);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  switch (op) {
    case ncclSum:
      return static_cast<uint64_t>(sum) & mask;
    case ncclProd:
      return prod & mask;
    case ncclMax:
      return static_cast<uint64_t>(hi) & mask;
    case ncclMin:
      return static_cast<uint64_t>(lo) & mask;
    default:  // ncclAvg: sums are never negative here, so truncation is unambiguous
      return static_cast<uint64_t>(sum / static_cast<int64_t>(vals.size())) & mask;
  }
}

double reduceFloat(ncclRedOp_t op, const std::vector<double>& vals) {
  double sum = 0, prod = 1, lo = vals[0], hi = vals[0];
  for (double v : vals) {
    sum += v;
    prod *= v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  switch (op) {
    case ncclSum:
      return sum;
    case ncclProd:
      return prod;
    case ncclMax:
      return hi;
    case ncclMin:
      return lo;
    default:
      return sum / static_cast<double>(vals.size());
  }
}

// Counts elements of `got` that differ from the periodic table `want` starting at `phase`.
template <typename U>
size_t countBitsWrong(const uint8_t* got, size_t elems, const uint8_t* want, size_t phase) {
  size_t wrong = 0, k = phase % kPatternPeriod;
  for (size_t i = 0; i < elems; i++) {
    U a, b;
    std::memcpy(&a, got + i * sizeof(U), sizeof(U));
    std::memcpy(&b, want + k * sizeof(U), sizeof(U));
    wrong += a != b;
    if (++k == kPatternPeriod) k = 0;
  }
  return wrong;
}

}  // namespace

uint64_t encodeValue(ncclDataType_t type, double value) {
  const TypeInfo& t = typeInfo(type);
  uint64_t bits = 0;
  float f = static_cast<float>(value);
  switch (type) {
    case ncclFloat16: {
      __half h = __float2half_rn(f);
      std::memcpy(&bits, &h, 2);
      return bits;
    }
    case ncclBfloat16: {
      __nv_bfloat16 b = __float2bfloat16_rn(f);
      std::memcpy(&bits, &b, 2);
      return bits;
    }
    case ncclFloat8e4m3:
      return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3);
    case ncclFloat8e5m2:
      return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2);
    case ncclFloat32:
      std::memcpy(&bits, &f, 4);
      return bits;
    case ncclFloat64:
      std::memcpy(&bits, &value, 8);
      return bits;
    default: {
      uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(value));
      return t.size == 8 ? u : u & ((1ull << (t.size * 8)) - 1);
    }
  }
}

double decodeValue(ncclDataType_t type, const void* element) {
  const TypeInfo& t = typeInfo(type);
  uint64_t bits = 0;
  std::memcpy(&bits, element, t.size);
  switch (type) {
    case ncclInt8:
      return static_cast<int8_t>(bits);
    case ncclUint8:
      return static_cast<uint8_t>(bits);
    case ncclInt32:
      return static_cast<int32_t>(bits);
    case ncclUint32:
      return static_cast<uint32_t>(bits);
    case ncclInt64:
      return static_cast<double>(static_cast<int64_t>(bits));
    case ncclUint64:
      return static_cast<double>(bits);
    case ncclFloat16: {
      __half h;
      std::memcpy(&h, element, 2);
      return __half2float(h);
    }
    case ncclBfloat16: {
      __nv_bfloat16 b;
      std::memcpy(&b, element, 2);
      return __bfloat162float(b);
    }
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: {
      __half_raw raw = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits),
                                               type == ncclFloat8e4m3 ? __NV_E4M3 : __NV_E5M2);
      return __half2float(__half(raw));
    }
    case ncclFloat32: {
      float f;
      std::memcpy(&f, element, 4);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, element, 8);
      return d;
    }
  }
}

void patternRange(const CheckSpec& spec, double* lo, double* hi) {
  const TypeInfo& t = typeInfo(spec.type);
  if (!collTraits(spec.coll).hasOp || spec.op == ncclMax || spec.op == ncclMin) {
    double m = std::min(kMinMaxCap, t.exactMax);
    *lo = t.isSigned ? -m : 0;
    *hi = m;
  } else if (spec.op == ncclProd) {
    *lo = 1;
    // Float products are powers of two, at most 2^8 (fp8 e4m3 ends at 448); integers wrap exactly.
    *hi = t.isFloat ? (spec.nranks <= 8 ? 2 : 1) : 3;
  } else {  // sum, avg, mulsum: every partial (weighted) sum of non-negative values stays exact
    double weights = spec.nranks;
    if (spec.op == kMulSum) {
      weights = 0;
      for (int r = 0; r < spec.nranks; r++) weights += mulSumScalar(r);
    }
    *lo = 0;
    *hi = std::min(kValueCap, std::floor(t.exactMax / weights));
  }
}

Checker::Checker(const CheckSpec& spec) : spec_(spec), elemSize_(typeInfo(spec.type).size) {
  const TypeInfo& t = typeInfo(spec.type);
  double lo = 0, hi = 0;
  patternRange(spec, &lo, &hi);
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  values_.assign(spec.nranks, std::vector<double>(kPatternPeriod));
  inputBits_.assign(spec.nranks, std::vector<uint8_t>(kPatternPeriod * elemSize_));
  for (int r = 0; r < spec.nranks; r++) {
    for (size_t k = 0; k < kPatternPeriod; k++) {
      double v = lo + static_cast<double>(mix(static_cast<uint64_t>(r) * kPatternPeriod + k) % span);
      values_[r][k] = v;
      uint64_t bits = encodeValue(spec.type, v);
      std::memcpy(&inputBits_[r][k * elemSize_], &bits, elemSize_);
    }
  }
  reduced_.resize(kPatternPeriod);
  reducedBits_.resize(kPatternPeriod * elemSize_);
  std::vector<double> column(spec.nranks);
  // mulsum: each rank's value times its scalar, then a sum.
  const bool mulSum = spec.op == kMulSum;
  const ncclRedOp_t op = mulSum ? ncclSum : spec.op;
  for (size_t k = 0; k < kPatternPeriod; k++) {
    for (int r = 0; r < spec.nranks; r++) column[r] = values_[r][k] * (mulSum ? mulSumScalar(r) : 1.0);
    uint64_t bits = t.isFloat ? encodeValue(spec.type, reduceFloat(op, column)) : reduceIntBits(t, op, column);
    std::memcpy(&reducedBits_[k * elemSize_], &bits, elemSize_);
    // Float Avg is compared against the exact mean; everything else against the encoded result.
    reduced_[k] = t.isFloat && spec.op == ncclAvg ? reduceFloat(spec.op, column) : decodeValue(spec.type, &bits);
  }
  if (t.isFloat && spec.op == ncclAvg && collTraits(spec.coll).hasOp) {
    tolerance_ = spec.nranks * std::ldexp(1.0, -t.mantissaBits) * std::max(1.0, hi);
  }
}

void Checker::fillInput(int rank, void* dst, size_t first, size_t elems) const {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const uint8_t* table = inputBits_[rank].data();
  size_t k = first % kPatternPeriod;
  while (elems > 0) {
    size_t n = std::min(elems, kPatternPeriod - k);
    std::memcpy(out, table + k * elemSize_, n * elemSize_);
    out += n * elemSize_;
    elems -= n;
    k = 0;
  }
}

size_t Checker::countSegment(const uint8_t* got, size_t elems, Source src, int rank, size_t phase) const {
  if (src == Source::kUntouched) return countUnpoisoned(got, elems * elemSize_, elemSize_);
  if (src == Source::kReduced && tolerance_ > 0) {
    size_t wrong = 0;
    for (size_t i = 0; i < elems; i++) {
      double v = decodeValue(spec_.type, got + i * elemSize_);
      wrong += !(std::fabs(v - reduced_[(phase + i) % kPatternPeriod]) <= tolerance_);  // NaN is wrong
    }
    return wrong;
  }
  const uint8_t* want = src == Source::kReduced ? reducedBits_.data() : inputBits_[rank].data();
  switch (elemSize_) {
    case 1:
      return countBitsWrong<uint8_t>(got, elems, want, phase);
    case 2:
      return countBitsWrong<uint16_t>(got, elems, want, phase);
    case 4:
      return countBitsWrong<uint32_t>(got, elems, want, phase);
    default:
      return countBitsWrong<uint64_t>(got, elems, want, phase);
  }
}

size_t Checker::countWrong(int rank, bool inPlace, const void* recv) const {
  const uint8_t* got = static_cast<const uint8_t*>(recv);
  const size_t c = spec_.count;
  switch (spec_.coll) {
    case Coll::kAllReduce:
      return countSegment(got, c, Source::kReduced, 0, 0);
    case Coll::kBroadcast:
      return countSegment(got, c, Source::kInput, spec_.root, 0);
    case Coll::kReduce:
      if (rank == spec_.root) return countSegment(got, c, Source::kReduced, 0, 0);
      // Not the root: NCCL leaves recvbuff alone.
      return countSegment(got, c, inPlace ? Source::kInput : Source::kUntouched, rank, 0);
    case Coll::kAllGather: {
      size_t wrong = 0;
      for (int j = 0; j < spec_.nranks; j++) wrong += countSegment(got + j * c * elemSize_, c, Source::kInput, j, 0);
      return wrong;
    }
    case Coll::kReduceScatter:
      return countSegment(got, c, Source::kReduced, 0, static_cast<size_t>(rank) * c);
    case Coll::kSendRecv:
    case Coll::kPutSignal:  // rank - 1 put its buffer here
      return countSegment(got, c, Source::kInput, (rank + spec_.nranks - 1) % spec_.nranks, 0);
    case Coll::kAllToAll: {
      // Block j came from rank j's send block `rank`.
      size_t wrong = 0;
      for (int j = 0; j < spec_.nranks; j++) {
        wrong += countSegment(got + j * c * elemSize_, c, Source::kInput, j, static_cast<size_t>(rank) * c);
      }
      return wrong;
    }
    case Coll::kGather: {
      if (rank != spec_.root) return countSegment(got, c * spec_.nranks, Source::kUntouched, rank, 0);
      size_t wrong = 0;
      for (int j = 0; j < spec_.nranks; j++) wrong += countSegment(got + j * c * elemSize_, c, Source::kInput, j, 0);
      return wrong;
    }
    case Coll::kScatter:
      return countSegment(got, c, Source::kInput, spec_.root, static_cast<size_t>(rank) * c);
  }
  return c;
}

size_t Checker::countUnpoisoned(const void* data, size_t bytes, size_t elemSize) {
  const uint8_t* b = static_cast<const uint8_t*>(data);
  size_t wrong = 0;
  for (size_t start = 0; start < bytes; start += elemSize) {
    size_t end = std::min(bytes, start + elemSize);
    for (size_t i = start; i < end; i++) {
      if (b[i] != kPoison) {
        wrong++;
        break;
      }
    }
  }
  return wrong;
}

}  // namespace braidperf
