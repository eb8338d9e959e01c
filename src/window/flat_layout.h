// Where each LSA rank's memory goes in a window's flat address range (pure arithmetic, no CUDA, so
// it is tested on any machine).
//
// Every rank of the LSA team reserves one range of lsaSize * stride bytes and maps LSA rank r's
// whole physical allocation into slot r = [r * stride, (r + 1) * stride). The window's bytes must
// sit at the same offset of every slot (the device API computes a peer's address by adding
// r * stride), while each rank's window may start at a different offset inside its allocation; so
// allocation r is mapped at userOffset - memOffset[r] in its slot, where userOffset is the largest
// memOffset. A mapping starts on a granularity boundary, so every memOffset must have the same
// remainder modulo the granularity. The stride is a multiple of 4 GiB (the device struct counts it
// in those units) that holds every mapping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::window {

// One LSA rank's window inside its physical allocation.
struct RankExtent {
  uint64_t allocBytes = 0;  // the whole physical allocation (a multiple of its granularity)
  uint64_t memOffset = 0;   // where the window starts in it
  uint64_t userBytes = 0;   // the window's size
};

struct FlatLayout {
  uint64_t stride = 0;               // bytes between two LSA ranks' slots (a multiple of 4 GiB)
  uint64_t userOffset = 0;           // the window's offset in every slot
  std::vector<uint64_t> mapOffsets;  // per LSA rank: where its allocation is mapped in its slot
  uint64_t rangeBytes() const { return stride * mapOffsets.size(); }
};

// Plans the layout for `ranks` (indexed by LSA rank) mapped with `granularity` (a power of two).
// False, with *why saying which ranks disagree, when no layout exists.
bool planFlatLayout(const std::vector<RankExtent>& ranks, uint64_t granularity, FlatLayout* out, std::string* why);

}  // namespace braid::window
