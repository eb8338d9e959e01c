// The board server's wire: a request that any process reaching its port may send (parsed by
// parseBoardRequest before anything is looked up), and the answer header a client reads back
// from a server (parseBoardAnswerHeader, which decides how many bytes the client then reads).
// The input's first byte picks which; for an answer, the next 8 bytes are the board size the
// client expects.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/board_wire.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (data == nullptr || size < 1) return 0;
  const bool request = (data[0] & 1) == 0;
  ++data;
  --size;
  if (request) {
    braid::BoardRequest r{};
    if (!braid::parseBoardRequest(data, size, &r)) return 0;
    FUZZ_CHECK(size == sizeof(r));
    FUZZ_CHECK(r.nRanks >= 1 && r.nRanks <= braid::kMaxBoardRanks && r.rank >= 0 && r.rank < r.nRanks);
    return 0;
  }
  if (size < sizeof(uint64_t)) return 0;
  uint64_t expected = 0;
  std::memcpy(&expected, data, sizeof(expected));
  data += sizeof(expected);
  size -= sizeof(expected);
  braid::BoardAnswerHeader h{};
  if (!braid::parseBoardAnswerHeader(data, size, static_cast<size_t>(expected), &h)) return 0;
  FUZZ_CHECK(size == sizeof(h) && h.magic == braid::kBoardServerMagic && h.bytes == expected);
  return 0;
}
