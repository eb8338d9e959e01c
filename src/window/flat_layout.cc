#include "window/flat_layout.h"

#include <algorithm>

#include "window/window_types.h"

namespace braid::window {
namespace {

uint64_t roundUp(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

bool planFlatLayout(const std::vector<RankExtent>& ranks, uint64_t granularity, FlatLayout* out, std::string* why) {
  *out = FlatLayout{};
  if (ranks.empty() || granularity == 0 || (granularity & (granularity - 1)) != 0) {
    *why = "no LSA rank, or a granularity that is not a power of two";
    return false;
  }
  const uint64_t residue = ranks[0].memOffset % granularity;
  uint64_t userOffset = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankExtent& e = ranks[r];
    if (e.memOffset % granularity != residue) {
      *why = "LSA rank " + std::to_string(r) + "'s window starts " + std::to_string(e.memOffset) +
             " bytes into its allocation and LSA rank 0's " + std::to_string(ranks[0].memOffset) +
             ": the two offsets must be equal modulo the mapping granularity (" + std::to_string(granularity) +
             " bytes)";
      return false;
    }
    if (e.allocBytes % granularity != 0 || e.memOffset > e.allocBytes || e.userBytes > e.allocBytes - e.memOffset) {
      *why = "LSA rank " + std::to_string(r) + "'s window does not fit in its allocation";
      return false;
    }
    userOffset = std::max(userOffset, e.memOffset);
  }
  uint64_t needed = 0;
  out->mapOffsets.resize(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    out->mapOffsets[r] = userOffset - ranks[r].memOffset;  // a multiple of the granularity
    needed = std::max(needed, out->mapOffsets[r] + ranks[r].allocBytes);
  }
  out->userOffset = userOffset;
  out->stride = roundUp(std::max<uint64_t>(needed, 1), kStrideUnit);
  return true;
}

}  // namespace braid::window
