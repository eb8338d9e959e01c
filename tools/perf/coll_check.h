// Data patterns and the result check of braid-perf, on the host.
//
// Rank r's input element i is v(r, i), a small integer that depends on r and on i modulo a prime
// period. The range of the integers is chosen per (type, op, nranks) so that every partial result
// of the reduction, in any order, is exact in the element type: sums stay below the largest
// integer the type holds exactly (fp8 e5m2: 8), products are powers of two (floats), min/max take
// signed values. So Sum, Prod, Min, Max and the integer Avg are compared bit for bit, whatever the
// algorithm's order; the floating-point Avg (NCCL: each input times 1/nranks, rounded, then summed)
// is compared within nranks * 2^-mantissa * largest input.
//
// Out-of-place receive buffers are filled with kPoison bytes before the operation, so an element
// that was not written is wrong, and bytes around the region that are no longer poison count as
// wrong too (countUnpoisoned).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "coll.h"

namespace braidperf {

constexpr uint8_t kPoison = 0xA5;        // no pattern value of any type has this byte in every position
constexpr size_t kPatternPeriod = 1031;  // prime: does not line up with power-of-two chunks

struct CheckSpec {
  Coll coll = Coll::kAllReduce;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int nranks = 1;
  int root = 0;
  size_t count = 0;  // the NCCL count argument
};

// Host conversions between double and the bytes of one element (little-endian, in the low bytes).
uint64_t encodeValue(ncclDataType_t type, double value);
double decodeValue(ncclDataType_t type, const void* element);

// The closed range [lo, hi] of pattern integers for this type, op and rank count.
void patternRange(const CheckSpec& spec, double* lo, double* hi);

class Checker {
 public:
  explicit Checker(const CheckSpec& spec);

  // Writes elements first .. first+elems-1 of rank's input into dst (elems * elemSize bytes).
  void fillInput(int rank, void* dst, size_t first, size_t elems) const;
  // Wrong elements in rank's receive region (recvElems(coll, count, nranks) elements at recv) after
  // the operation. inPlace: the region was the input (matters only where the rank's result is
  // "unchanged", i.e. Reduce on a non-root rank).
  size_t countWrong(int rank, bool inPlace, const void* recv) const;

  double inputValue(int rank, size_t index) const { return values_[rank][index % kPatternPeriod]; }
  // The reduction over ranks of element `index` of the inputs, as the checker expects it.
  double reducedValue(size_t index) const { return reduced_[index % kPatternPeriod]; }
  double tolerance() const { return tolerance_; }

  // Elements (groups of elemSize bytes, the last one possibly short) with a byte other than kPoison.
  static size_t countUnpoisoned(const void* data, size_t bytes, size_t elemSize);

 private:
  enum class Source { kReduced, kInput, kUntouched };
  size_t countSegment(const uint8_t* got, size_t elems, Source src, int rank, size_t phase) const;

  CheckSpec spec_;
  size_t elemSize_;
  double tolerance_ = 0;
  std::vector<std::vector<double>> values_;      // [rank][k], k < kPatternPeriod
  std::vector<std::vector<uint8_t>> inputBits_;  // [rank], kPatternPeriod encoded elements
  std::vector<double> reduced_;
  std::vector<uint8_t> reducedBits_;
};

}  // namespace braidperf
