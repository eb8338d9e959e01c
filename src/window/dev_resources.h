// The resource window of a device communicator (ncclDevCommCreate): one buffer per requirement,
// laid out one after the other, each at a multiple of 128 bytes so that its handle is its offset
// in 128-byte units (the addressing NCCL's device code does: ncclGetResourceBufferOffset). The
// sizes of the library's own buffers are NCCL's, so that kernels compiled against either header
// address the same bytes (docs/device-api.md, "Memory a host must lay out as NCCL does"). Pure.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid::window {

constexpr uint64_t kResourceHandleUnit = 128;
// A device communicator's buffers together stay below this; more is a bad requirement, not a
// need (a handle is a 32-bit count of 128-byte units: 512 GiB).
constexpr uint64_t kMaxResourceBytes = uint64_t{1} << 38;

// A set of `nBarriers` LSA barriers for a team of `teamSize` ranks: per barrier an epoch for each
// kind of session, an arrival counter, and one inbox word per team rank. Sizes past
// kMaxResourceBytes come back as kMaxResourceBytes + 1 (never wrapped), which the layout refuses.
uint64_t lsaBarrierBytes(int nBarriers, int teamSize);
constexpr uint64_t kLsaBarrierAlign = 4;

// The LL all-to-all of `nBlocks` blocks of `nSlots` 16-byte slots: per block a control line and
// two banks of slots.
uint64_t lla2aBytes(int nBlocks, int nSlots);
constexpr uint64_t kLla2aAlign = 16;

struct ResourceAsk {
  uint64_t bytes = 0;
  uint64_t align = 0;             // 0 or a power of two
  uint32_t* outHandle = nullptr;  // where its handle goes (may be null)
  std::string what;               // for the WARN of a bad one
};

// Places every buffer of `asks` in order and writes its handle; *totalBytes is the end of the last,
// a multiple of 128. A bad alignment or a total past kMaxResourceBytes is ncclInvalidArgument with
// a WARN naming the buffer.
[[nodiscard]] ncclResult_t layOutResources(const std::vector<ResourceAsk>& asks, uint64_t* totalBytes);

}  // namespace braid::window
