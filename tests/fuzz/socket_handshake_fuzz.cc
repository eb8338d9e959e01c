// The first bytes any stranger sends to a Braid listener: the socket handshake (magic and type),
// parsed by parseSocketHandshake before the listener reads anything else from the connection.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_check.h"
#include "util/socket.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using braid::SocketType;
  braid::SocketHandshake h{};
  if (braid::parseSocketHandshake(data, size, &h) != ncclSuccess) {
    FUZZ_CHECK(size < braid::kSocketHandshakeBytes);
    return 0;
  }
  FUZZ_CHECK(size >= braid::kSocketHandshakeBytes);
  // What the parser read is what a connecting socket would have sent for it.
  uint8_t again[braid::kSocketHandshakeBytes];
  braid::encodeSocketHandshake(h.magic, static_cast<SocketType>(h.type), again);
  FUZZ_CHECK(std::memcmp(again, data, sizeof(again)) == 0);
  // A listener accepts it only for its own magic and type.
  for (uint32_t t = 0; t <= static_cast<uint32_t>(SocketType::kRas) + 1; ++t) {
    const bool match = braid::socketHandshakeMatches(h, h.magic, static_cast<SocketType>(t));
    FUZZ_CHECK(match == (h.type == t));
    FUZZ_CHECK(!braid::socketHandshakeMatches(h, h.magic + 1, static_cast<SocketType>(t)));
  }
  return 0;
}
