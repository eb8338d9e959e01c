#include "window/rma_wire.h"

#include <cstring>

namespace braid::window {

ChunkHeader chunkHeader(uint64_t serial, uint64_t offset, uint64_t bytes, int ctx, int sig, bool last, bool graph) {
  ChunkHeader h{};
  h.magic = kChunkMagic;
  h.flags = (last ? kLastChunk : 0) | (graph ? kGraphSignal : 0);
  h.serial = serial;
  h.offset = offset;
  h.bytes = bytes;
  h.ctx = ctx;
  h.sig = sig;
  return h;
}

bool parseChunk(const void* message, size_t size, int nCtx, int nSig, ChunkHeader* out, std::string* why) {
  if (size < sizeof(ChunkHeader)) {
    *why = "shorter than a chunk header";
    return false;
  }
  ChunkHeader h;
  std::memcpy(&h, message, sizeof(h));
  if (h.magic != kChunkMagic || (h.flags & ~kChunkFlags) != 0) {
    *why = "not a chunk (magic or flags)";
    return false;
  }
  if (h.bytes != size - sizeof(h)) {
    *why = "its payload size is not the rest of the message";
    return false;
  }
  if (h.ctx < 0 || h.ctx >= nCtx || h.sig < 0 || h.sig >= nSig) {
    *why = "context or signal index out of range";
    return false;
  }
  *out = h;
  return true;
}

}  // namespace braid::window
