// What the socket network's listener reads from every connection that passed the handshake: a
// SocketNetHello, parsed by parseSocketNetHello. The listener then sizes the connection's socket
// list from the first hello of a connId and places each socket by index: the harness replays that
// placement over a stream of hellos (16 bytes each) and checks every index it uses.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "fuzz_check.h"
#include "net/socket_net.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using braid::net::SocketNetHello;
  std::map<uint64_t, std::vector<bool>> partial;  // connId -> which sockets arrived
  if (data == nullptr) return 0;
  for (; size > 0; data += std::min(size, sizeof(SocketNetHello)), size -= std::min(size, sizeof(SocketNetHello))) {
    SocketNetHello hello{};
    const size_t bytes = std::min(size, sizeof(SocketNetHello));
    if (!braid::net::parseSocketNetHello(data, bytes, &hello)) continue;  // the connection is dropped
    FUZZ_CHECK(bytes == sizeof(hello));
    FUZZ_CHECK(hello.nSocks >= 1 && hello.nSocks <= static_cast<uint32_t>(braid::net::kSocketNetMaxSocks));
    std::vector<bool>& sockets = partial[hello.connId];
    if (sockets.empty()) sockets.resize(hello.nSocks + 1);
    if (sockets.size() != hello.nSocks + 1) continue;  // inconsistent with the first: ignored
    FUZZ_CHECK(hello.index < sockets.size());
    if (sockets[hello.index]) continue;
    sockets[hello.index] = true;
    bool complete = true;
    for (bool arrived : sockets) complete = complete && arrived;
    if (complete) partial.erase(hello.connId);
  }
  return 0;
}
