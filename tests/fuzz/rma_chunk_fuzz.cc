// What a rank on another host may send to a rank's one-sided operations connection: one message
// of any size (window/rma_wire.h). Input: byte 0 = the receiver's context count (1-16), byte 1 = its
// signal count (1-16), bytes 2-9 = the size of the receiver's window, the rest = the message.
// Accepted messages say of themselves what parseChunk promises (payload the rest, context and
// signal in range, only known flags), and a chunk chunkFits accepts lies inside the window without
// overflow.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "window/rma_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 10) return 0;
  const int nCtx = 1 + data[0] % 16, nSig = 1 + data[1] % 16;
  uint64_t windowBytes = 0;
  std::memcpy(&windowBytes, data + 2, sizeof(windowBytes));
  const uint8_t* message = data + 10;
  const size_t bytes = size - 10;
  braid::window::ChunkHeader h{};
  std::string why;
  if (!braid::window::parseChunk(message, bytes, nCtx, nSig, &h, &why)) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  FUZZ_CHECK(h.magic == braid::window::kChunkMagic);
  FUZZ_CHECK((h.flags & ~braid::window::kChunkFlags) == 0);
  FUZZ_CHECK(h.bytes == bytes - sizeof(h));
  FUZZ_CHECK(h.ctx >= 0 && h.ctx < nCtx && h.sig >= 0 && h.sig < nSig);
  if (braid::window::chunkFits(h, windowBytes)) {
    FUZZ_CHECK(h.offset <= windowBytes);
    FUZZ_CHECK(h.offset + h.bytes >= h.offset);  // no wrap
    FUZZ_CHECK(h.offset + h.bytes <= windowBytes);
  }
  return 0;
}
