// Where each channel's counters and buffers sit inside the one block that a rank allocates per
// (peer, direction, kind). Pure arithmetic, shared by both ends: the owner computes it to fill its
// own pointers and the peer computes the same offsets to address the block it mapped, so the
// offsets depend only on the channel count and the buffer sizes, never on the allocation mechanism.
//
// Receiver's block (Role::kRecv): nChannels tails, one per 128-byte line (each followed, from byte
// kStepTagsOffset of its line, by the channel's step tags, see DevSendConn::stepTags), then, from the next
// 4096-byte boundary, channel 0's buffers for LL, LL128 and Simple (each starting on a 4096-byte
// boundary), then channel 1's, and so on. Sender's block (Role::kSend): nChannels heads, one per
// 128-byte line. The total is rounded up to the allocation granularity.
#pragma once

#include <cstddef>

#include "device/dev_types.h"

namespace braid::transport {

constexpr size_t kCounterAlign = 128;
constexpr size_t kBufferAlign = 4096;
constexpr size_t kStepTagsOffset = 64;
static_assert(kStepTagsOffset + kFifoSlotsSimple * sizeof(uint64_t) <= kCounterAlign,
              "a channel's step tags fit in its tail's line");

enum class Role : int { kSend = 0, kRecv = 1 };

struct BlockLayout {
  size_t bytes = 0;                     // whole block, a multiple of the granularity
  size_t buffersStart = 0;              // first channel's first buffer
  size_t channelStride = 0;             // bytes of one channel's buffers
  size_t protoOffset[kNumProtos] = {};  // of each protocol's buffer within a channel's buffers
  size_t protoBytes[kNumProtos] = {};   // the FIFO bytes of each protocol (0: no buffer)

  // The counter of the index-th channel of the block (tail in a receiver's block, head in a
  // sender's).
  size_t counterOffset(int index) const { return static_cast<size_t>(index) * kCounterAlign; }
  size_t stepTagsOffset(int index) const { return counterOffset(index) + kStepTagsOffset; }  // receiver's block
  size_t bufferOffset(int index, int proto) const {
    return buffersStart + static_cast<size_t>(index) * channelStride + protoOffset[proto];
  }
};

constexpr size_t alignUp(size_t value, size_t align) { return (value + align - 1) / align * align; }

// granularity: the allocation unit (>= 1; cuMem's minimum granularity, the page size, ...).
BlockLayout computeLayout(Role role, int nChannels, const size_t buffBytes[kNumProtos], size_t granularity);

}  // namespace braid::transport
