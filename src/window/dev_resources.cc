#include "window/dev_resources.h"

#include <algorithm>

#include "util/log.h"

namespace braid::window {

namespace {

// a * b * unit, or kMaxResourceBytes + 1 where that is more (no product wraps: each factor < 2^33).
uint64_t boundedBytes(uint64_t a, uint64_t b, uint64_t unit) {
  const unsigned __int128 bytes = static_cast<unsigned __int128>(a) * b * unit;
  return bytes > kMaxResourceBytes ? kMaxResourceBytes + 1 : static_cast<uint64_t>(bytes);
}

}  // namespace

uint64_t lsaBarrierBytes(int nBarriers, int teamSize) {
  const uint64_t n = static_cast<uint64_t>(std::max(nBarriers, 0));
  return boundedBytes(n, 3 + static_cast<uint64_t>(std::max(teamSize, 0)), sizeof(uint32_t));
}

uint64_t lla2aBytes(int nBlocks, int nSlots) {
  const uint64_t b = static_cast<uint64_t>(std::max(nBlocks, 0));
  return boundedBytes(b, 1 + 2 * static_cast<uint64_t>(std::max(nSlots, 0)), 16);
}

ncclResult_t layOutResources(const std::vector<ResourceAsk>& asks, uint64_t* totalBytes) {
  uint64_t end = 0;
  for (const ResourceAsk& a : asks) {
    if ((a.align & (a.align - 1)) != 0 || a.align > kMaxResourceBytes) {
      WARN("ncclDevCommCreate: %s: bufferAlign %llu is not a power of two", a.what.c_str(),
           static_cast<unsigned long long>(a.align));
      return ncclInvalidArgument;
    }
    const uint64_t align = std::max(kResourceHandleUnit, a.align);
    const uint64_t start = (end + align - 1) / align * align;
    if (a.bytes > kMaxResourceBytes || start + a.bytes > kMaxResourceBytes) {
      WARN("ncclDevCommCreate: %s: bufferSize %llu brings the device communicator's buffers past %llu GiB",
           a.what.c_str(), static_cast<unsigned long long>(a.bytes),
           static_cast<unsigned long long>(kMaxResourceBytes >> 30));
      return ncclInvalidArgument;
    }
    if (a.outHandle != nullptr) *a.outHandle = static_cast<uint32_t>(start / kResourceHandleUnit);
    end = start + a.bytes;
  }
  *totalBytes = (end + kResourceHandleUnit - 1) / kResourceHandleUnit * kResourceHandleUnit;
  return ncclSuccess;
}

}  // namespace braid::window
