// What one-sided operations send between hosts (net_backend.h): each chunk of a put is a 64-byte
// header and its payload in one network message. The receiver trusts nothing in it: parseChunk
// checks what the message says of itself, chunkFits the range against the receiver's own window.
// Pure (no CUDA), so a fuzzer runs it (tests/fuzz/rma_chunk_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace braid::window {

constexpr uint32_t kChunkMagic = 0x42524d41;  // "BRMA"
constexpr uint32_t kLastChunk = 1;            // the put's signal follows this chunk's data
constexpr uint32_t kGraphSignal = 2;          // that signal comes from a CUDA graph (a graph wait takes it)
constexpr uint32_t kChunkFlags = kLastChunk | kGraphSignal;

struct ChunkHeader {
  uint32_t magic;
  uint32_t flags;   // kChunkFlags, nothing else
  uint64_t serial;  // the window's registration serial (the same on every rank)
  uint64_t offset;  // in the receiver's window
  uint64_t bytes;   // payload after the header
  int32_t ctx;
  int32_t sig;
  uint64_t reserved[3];
};
static_assert(sizeof(ChunkHeader) == 64, "ChunkHeader crosses process boundaries: keep it fixed");

ChunkHeader chunkHeader(uint64_t serial, uint64_t offset, uint64_t bytes, int ctx, int sig, bool last,
                        bool graph = false);

// The header of a `size`-byte message, if it is a chunk a rank with nCtx contexts and nSig signal
// indices can take: the magic, only known flags, the payload the rest of the message, context and
// signal in range. Otherwise false, with *why for the WARN.
bool parseChunk(const void* message, size_t size, int nCtx, int nSig, ChunkHeader* out, std::string* why);

// Whether the chunk's payload lies inside a window of windowBytes bytes.
inline bool chunkFits(const ChunkHeader& h, uint64_t windowBytes) {
  return h.offset <= windowBytes && h.bytes <= windowBytes - h.offset;
}

}  // namespace braid::window
