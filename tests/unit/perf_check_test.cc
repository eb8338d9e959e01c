// braid-perf's checker: the inputs and expected values of every type, op and rank count against an
// independent reference, the count of wrong elements of every collective, the poison guards.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "coll_check.h"

namespace braidperf {
namespace {

// Round-to-nearest-even of x to a binary format with `mant` explicit mantissa bits (normal range).
double roundTo(double x, int mant) {
  if (x == 0 || mant >= 52) return x;
  int e = 0;
  double f = std::frexp(x, &e);  // x = f * 2^e, 0.5 <= |f| < 1
  return std::ldexp(std::nearbyint(std::ldexp(f, mant + 1)), e - mant - 1);
}

// The value of integer x in a two's-complement (or unsigned) type of `bytes` bytes.
double wrapInt(uint64_t x, size_t bytes, bool isSigned) {
  if (bytes < 8) x &= (uint64_t{1} << (8 * bytes)) - 1;
  if (isSigned && bytes < 8 && (x >> (8 * bytes - 1)) != 0) return static_cast<double>(x) - std::ldexp(1.0, 8 * bytes);
  return isSigned ? static_cast<double>(static_cast<int64_t>(x)) : static_cast<double>(x);
}

// The reduction of vals in the given order, rounding (or wrapping) after every step as a device would.
double refReduce(const TypeInfo& t, ncclRedOp_t op, const std::vector<double>& vals) {
  const double n = static_cast<double>(vals.size());
  if (!t.isFloat) {
    uint64_t acc = static_cast<uint64_t>(static_cast<int64_t>(vals[0]));
    for (size_t i = 1; i < vals.size(); i++) {
      uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(vals[i]));
      double a = wrapInt(acc, t.size, t.isSigned), b = vals[i];
      if (op == ncclSum || op == ncclAvg) acc += v;
      if (op == ncclProd) acc *= v;
      if (op == ncclMax) acc = static_cast<uint64_t>(static_cast<int64_t>(std::max(a, b)));
      if (op == ncclMin) acc = static_cast<uint64_t>(static_cast<int64_t>(std::min(a, b)));
    }
    double r = wrapInt(acc, t.size, t.isSigned);
    return op == ncclAvg ? std::trunc(r / n) : r;
  }
  if (op == ncclAvg) {  // NCCL: every input times 1/n rounded to the type, then a rounded sum
    double scale = roundTo(1.0 / n, t.mantissaBits), acc = 0;
    for (double v : vals) acc = roundTo(acc + roundTo(v * scale, t.mantissaBits), t.mantissaBits);
    return acc;
  }
  double acc = vals[0];
  for (size_t i = 1; i < vals.size(); i++) {
    double v = vals[i];
    acc = op == ncclSum ? acc + v : op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : std::min(acc, v);
    acc = roundTo(acc, t.mantissaBits);
  }
  return acc;
}

// mulsum: the values in rank order times each rank's scalar (exact: 2 or 0), to be summed.
std::vector<double> weighted(ncclRedOp_t op, std::vector<double> byRank) {
  if (op == kMulSum) {
    for (size_t r = 0; r < byRank.size(); r++) byRank[r] *= mulSumScalar(static_cast<int>(r));
  }
  return byRank;
}
ncclRedOp_t reduceOpOf(ncclRedOp_t op) { return op == kMulSum ? ncclSum : op; }

TEST(PerfCheck, ConversionsMatchKnownEncodings) {
  EXPECT_EQ(encodeValue(ncclFloat16, 1.0), 0x3C00u);
  EXPECT_EQ(encodeValue(ncclBfloat16, 1.0), 0x3F80u);
  EXPECT_EQ(encodeValue(ncclFloat8e4m3, 1.0), 0x38u);
  EXPECT_EQ(encodeValue(ncclFloat8e5m2, 1.0), 0x3Cu);
  EXPECT_EQ(encodeValue(ncclFloat8e4m3, -16.0), 0xD8u);
  EXPECT_EQ(encodeValue(ncclInt8, -1.0), 0xFFu);
  EXPECT_EQ(encodeValue(ncclUint32, 7.0), 7u);
  for (int t = 0; t < ncclNumTypes; t++) {
    const TypeInfo& info = typeInfo(static_cast<ncclDataType_t>(t));
    for (double v : {0.0, 1.0, 2.0, 3.0, 7.0, 8.0, 0.34375, 100.0, -64.0}) {
      if (!info.isFloat && (v != std::trunc(v) || (!info.isSigned && v < 0))) continue;
      uint64_t bits = encodeValue(info.type, v);
      double want = info.isFloat ? roundTo(v, info.mantissaBits) : v;
      if (info.type == ncclFloat8e4m3 && std::fabs(want) > 448) continue;
      EXPECT_EQ(decodeValue(info.type, &bits), want) << info.name << " " << v;
    }
  }
}

// For every type, op and rank count 2..8: every input is exact in its type, and the checker's
// expected value equals the reference reduction in every rank order (ring rotations, both
// directions); the float Avg lies within the checker's tolerance of the reference.
TEST(PerfCheck, ExpectedValuesForEveryTypeOpAndRankCount) {
  for (int type = 0; type < ncclNumTypes; type++) {
    const TypeInfo& t = typeInfo(static_cast<ncclDataType_t>(type));
    for (int op = 0; op <= kMulSum; op++) {
      for (int n = 2; n <= 8; n++) {
        CheckSpec spec;
        spec.type = t.type;
        spec.op = static_cast<ncclRedOp_t>(op);
        spec.nranks = n;
        Checker checker(spec);
        const bool exact = !t.isFloat || spec.op != ncclAvg;
        EXPECT_EQ(checker.tolerance() == 0, exact) << t.name << " " << opName(spec.op) << " n=" << n;
        std::vector<double> vals(n), ordered(n);
        bool allSame = true;
        for (size_t k = 0; k < kPatternPeriod; k++) {
          for (int r = 0; r < n; r++) {
            vals[r] = checker.inputValue(r, k);
            ASSERT_EQ(roundTo(vals[r], t.isFloat ? t.mantissaBits : 60), vals[r]) << t.name;
            ASSERT_LE(std::fabs(vals[r]), t.exactMax) << t.name;
            allSame = allSame && vals[r] == checker.inputValue(0, 0);
          }
          const std::vector<double> terms = weighted(spec.op, vals);
          for (int start = 0; start < n; start++) {
            for (int dir : {1, -1}) {
              for (int i = 0; i < n; i++) ordered[i] = terms[((start + dir * i) % n + n) % n];
              double ref = refReduce(t, reduceOpOf(spec.op), ordered);
              if (exact) {
                ASSERT_EQ(ref, checker.reducedValue(k)) << t.name << " " << opName(spec.op) << " n=" << n << " k=" << k;
              } else {
                ASSERT_LE(std::fabs(ref - checker.reducedValue(k)), checker.tolerance()) << t.name << " n=" << n;
              }
            }
          }
        }
        EXPECT_FALSE(allSame) << t.name << " " << opName(spec.op) << ": the pattern must vary";
      }
    }
  }
}

std::vector<uint8_t> encodeAll(ncclDataType_t type, const std::vector<double>& v) {
  size_t es = typeInfo(type).size;
  std::vector<uint8_t> out(v.size() * es);
  for (size_t i = 0; i < v.size(); i++) {
    uint64_t bits = encodeValue(type, v[i]);
    std::memcpy(&out[i * es], &bits, es);
  }
  return out;
}

// What each rank's receive region holds after a correct collective, computed from the definition.
std::vector<uint8_t> simulate(const CheckSpec& s, const std::vector<std::vector<double>>& in, int rank, bool inPlace) {
  const TypeInfo& t = typeInfo(s.type);
  const size_t c = s.count;
  std::vector<double> out;
  auto reduced = [&](size_t i) {
    std::vector<double> col;
    for (const std::vector<double>& r : in) col.push_back(r[i]);
    return refReduce(t, reduceOpOf(s.op), weighted(s.op, col));
  };
  switch (s.coll) {
    case Coll::kAllReduce:
      for (size_t i = 0; i < c; i++) out.push_back(reduced(i));
      break;
    case Coll::kBroadcast:
      out = in[s.root];
      break;
    case Coll::kReduce:
      if (rank != s.root && !inPlace) return std::vector<uint8_t>(c * t.size, kPoison);
      if (rank != s.root) out = in[rank];
      for (size_t i = 0; rank == s.root && i < c; i++) out.push_back(reduced(i));
      break;
    case Coll::kAllGather:
      for (const std::vector<double>& r : in) out.insert(out.end(), r.begin(), r.end());
      break;
    default:
      for (size_t i = 0; i < c; i++) out.push_back(reduced(rank * c + i));
      break;
  }
  return encodeAll(s.type, out);
}

TEST(PerfCheck, CountsWrongElementsOfEveryCollective) {
  const Coll colls[] = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter};
  for (Coll coll : colls) {
    for (int type = 0; type < ncclNumTypes; type++) {
      for (int op = 0; op < (collTraits(coll).hasOp ? kMulSum + 1 : 1); op++) {
        for (int n : {2, 3, 8}) {
          CheckSpec s;
          s.coll = coll;
          s.type = static_cast<ncclDataType_t>(type);
          s.op = static_cast<ncclRedOp_t>(op);
          s.nranks = n;
          s.root = n - 1;
          s.count = kPatternPeriod + 77;  // crosses the pattern's period
          const size_t es = typeInfo(s.type).size, sendN = sendElems(coll, s.count, n);
          Checker checker(s);
          std::vector<std::vector<double>> in(n);
          for (int r = 0; r < n; r++) {
            std::vector<uint8_t> bytes(sendN * es);
            checker.fillInput(r, bytes.data(), 0, sendN);
            for (size_t i = 0; i < sendN; i++) in[r].push_back(decodeValue(s.type, &bytes[i * es]));
            EXPECT_EQ(in[r][5], checker.inputValue(r, 5));
          }
          for (int rank = 0; rank < n; rank++) {
            for (bool inPlace : {false, true}) {
              std::vector<uint8_t> out = simulate(s, in, rank, inPlace);
              ASSERT_EQ(out.size(), recvElems(coll, s.count, n) * es);
              const std::string what = std::string(collTraits(coll).name) + " " + typeInfo(s.type).name + " " +
                                       opName(s.op) + " n=" + std::to_string(n) + " rank " + std::to_string(rank);
              ASSERT_EQ(checker.countWrong(rank, inPlace, out.data()), 0u) << what;
              // Corrupt the first and the last element: NaN for floats, a flipped bit for integers.
              for (size_t at : {size_t{0}, out.size() / es - 1}) {
                uint64_t bad = typeInfo(s.type).isFloat ? encodeValue(s.type, NAN) : (out[at * es] ^ 1u);
                std::memcpy(&out[at * es], &bad, typeInfo(s.type).isFloat ? es : 1);
              }
              EXPECT_EQ(checker.countWrong(rank, inPlace, out.data()), 2u) << what;
            }
          }
        }
      }
    }
  }
}

TEST(PerfCheck, PoisonGuards) {
  std::vector<uint8_t> guard(10, kPoison);
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 4), 0u);
  guard[1] = 0;
  guard[9] = 1;
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 4), 2u);  // element 0 and the short last one
  guard[2] = 0;
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 4), 2u);
  EXPECT_EQ(Checker::countUnpoisoned(guard.data(), guard.size(), 1), 3u);
}

}  // namespace
}  // namespace braidperf
