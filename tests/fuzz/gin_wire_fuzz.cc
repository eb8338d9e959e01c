// What a rank on another host may send to a rank's proxy GIN transport: one message of any size
// (window/gin_wire.h). Input: byte 0 = the receiver's context count (1-16), bytes 1-8 = the size of
// the receiver's window, the rest = the message. Accepted messages say of themselves what parseGin
// promises (magic, only known flags, at most one signal kind, a VA signal with a signal, without
// data and last, a signal only on a last chunk, payload the rest, context in range), and a range
// ginFits accepts lies inside the window without overflow.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "window/gin_wire.h"

namespace {

void checkFits(uint64_t offset, uint64_t bytes, uint64_t windowBytes) {
  if (!braid::window::ginFits(offset, bytes, windowBytes)) return;
  FUZZ_CHECK(offset <= windowBytes);
  FUZZ_CHECK(offset + bytes >= offset);  // no wrap
  FUZZ_CHECK(offset + bytes <= windowBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  const uint32_t nCtx = 1 + data[0] % 16;
  uint64_t windowBytes = 0;
  std::memcpy(&windowBytes, data + 1, sizeof(windowBytes));
  const uint8_t* message = data + 9;
  const size_t bytes = size - 9;
  namespace w = braid::window;
  w::GinHeader h{};
  std::string why;
  const bool gin = w::isGinMessage(message, bytes);
  if (!w::parseGin(message, bytes, nCtx, &h, &why)) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  FUZZ_CHECK(gin && h.magic == w::kGinMagic);
  FUZZ_CHECK(std::memcmp(&h, message, sizeof(h)) == 0);  // the header as sent, nothing rewritten
  FUZZ_CHECK((h.flags & ~w::kGinFlags) == 0);
  const bool inc = (h.flags & w::kGinSignalInc) != 0, add = (h.flags & w::kGinSignalAdd) != 0;
  const bool last = (h.flags & w::kGinLast) != 0, va = (h.flags & w::kGinVaSignal) != 0;
  FUZZ_CHECK(!(inc && add));
  if (va) FUZZ_CHECK((inc || add) && h.bytes == 0 && last);
  if (inc || add) FUZZ_CHECK(last);
  if (inc) FUZZ_CHECK(h.value == 1);
  const bool request = (h.flags & w::kGinGetRequest) != 0, reply = (h.flags & w::kGinGetReply) != 0;
  FUZZ_CHECK((request || reply) == (h.tag != 0) && !(request && reply));
  if (request || reply) FUZZ_CHECK(!inc && !add && !va);
  if (request) FUZZ_CHECK(h.bytes == 0 && last);
  FUZZ_CHECK(h.bytes == bytes - sizeof(h));
  FUZZ_CHECK(h.context < nCtx);
  // What the receiver checks next: the payload's range, and a VA signal's word, in its window.
  checkFits(h.offset, h.bytes, windowBytes);
  checkFits(h.offset, sizeof(uint64_t), windowBytes);
  return 0;
}
