#include "transport/layout.h"

namespace braid::transport {

BlockLayout computeLayout(Role role, int nChannels, const size_t buffBytes[kNumProtos], size_t granularity) {
  BlockLayout layout;
  size_t counters = static_cast<size_t>(nChannels) * kCounterAlign;
  if (role == Role::kSend) {
    layout.bytes = alignUp(counters, granularity);
    layout.buffersStart = counters;
    return layout;
  }
  layout.buffersStart = alignUp(counters, kBufferAlign);
  size_t offset = 0;
  for (int p = 0; p < kNumProtos; ++p) {
    layout.protoOffset[p] = offset;
    layout.protoBytes[p] = buffBytes[p];
    offset += alignUp(buffBytes[p], kBufferAlign);
  }
  layout.channelStride = offset;
  layout.bytes = alignUp(layout.buffersStart + static_cast<size_t>(nChannels) * offset, granularity);
  return layout;
}

}  // namespace braid::transport
