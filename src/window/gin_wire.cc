#include "window/gin_wire.h"

#include <cstring>

namespace braid::window {

bool isGinMessage(const void* message, size_t size) {
  uint32_t magic = 0;
  if (size < sizeof(magic)) return false;
  std::memcpy(&magic, message, sizeof(magic));
  return magic == kGinMagic;
}

bool parseGin(const void* message, size_t size, uint32_t maxContexts, GinHeader* out, std::string* why) {
  if (size < sizeof(GinHeader)) {
    *why = "shorter than a GIN header";
    return false;
  }
  GinHeader h;
  std::memcpy(&h, message, sizeof(h));
  if (h.magic != kGinMagic || (h.flags & ~kGinFlags) != 0) {
    *why = "not a GIN message (magic or flags)";
    return false;
  }
  const bool inc = (h.flags & kGinSignalInc) != 0;
  const bool add = (h.flags & kGinSignalAdd) != 0;
  if (inc && add) {
    *why = "two signal kinds";
    return false;
  }
  const bool request = (h.flags & kGinGetRequest) != 0;
  const bool reply = (h.flags & kGinGetReply) != 0;
  if (inc && h.value != 1) {
    *why = "an increment by other than 1";
    return false;
  }
  if ((request || reply) != (h.tag != 0) || (request && reply)) {
    *why = "a tag without a get, or a get without a tag, or both a request and a reply";
    return false;
  }
  if ((request || reply) && (inc || add || (h.flags & kGinVaSignal) != 0)) {
    *why = "a get's message with a signal";
    return false;
  }
  if (request && (h.bytes != 0 || (h.flags & kGinLast) == 0)) {
    *why = "a get request with data, or not last";
    return false;
  }
  if ((h.flags & kGinVaSignal) != 0 && (!(inc || add) || h.bytes != 0 || (h.flags & kGinLast) == 0)) {
    *why = "a VA signal without a signal, with data, or not last";
    return false;
  }
  if ((inc || add) && (h.flags & kGinLast) == 0) {
    *why = "a signal on a chunk that is not a put's last";
    return false;
  }
  if (h.bytes != size - sizeof(h)) {
    *why = "its payload size is not the rest of the message";
    return false;
  }
  if (h.context >= maxContexts) {
    *why = "GIN context " + std::to_string(h.context) + " out of range";
    return false;
  }
  *out = h;
  return true;
}

}  // namespace braid::window
