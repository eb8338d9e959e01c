// What a rank reads from another rank's direct bootstrap connection: the PeerHello, then a stream
// of PeerMsgHeader each followed by its payload. The input is the receiver's own (rank, nranks),
// the hello, then headers; payloads are not part of the input (their size is what matters). The
// harness keeps the receiver's accounting of early messages as bootstrap_ops.cc does and checks
// that it never holds more than kBootstrapMaxQueuedBytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/wire.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (data == nullptr || size < 2 * sizeof(uint32_t)) return 0;
  uint32_t words[2];
  std::memcpy(words, data, sizeof(words));
  data += sizeof(words);
  size -= sizeof(words);
  // The receiver's own identity is trusted: any valid one.
  const int nranks = 2 + static_cast<int>(words[1] % static_cast<uint32_t>(braid::kBootstrapMaxRanks - 1));
  const int rank = static_cast<int>(words[0] % static_cast<uint32_t>(nranks));

  braid::PeerHello hello{};
  std::string why;
  const size_t helloBytes = std::min(size, sizeof(hello));
  if (braid::parsePeerHello(data, helloBytes, rank, nranks, &hello, &why) != ncclSuccess) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  FUZZ_CHECK(hello.rank >= 0 && hello.rank < nranks && hello.rank != rank && hello.nranks == nranks);
  data += sizeof(hello);
  size -= sizeof(hello);

  uint64_t queued = 0;
  while (size > 0) {
    const size_t headerBytes = std::min(size, sizeof(braid::PeerMsgHeader));
    braid::PeerMsgHeader header{};
    if (braid::parsePeerMsgHeader(data, headerBytes, &header, &why) != ncclSuccess) {
      FUZZ_CHECK(!why.empty());
      return 0;  // the stream is out of step: the connection is closed
    }
    FUZZ_CHECK(header.kind >= static_cast<uint32_t>(braid::PeerMsgKind::kUser) &&
               header.kind <= static_cast<uint32_t>(braid::PeerMsgKind::kBroadcast));
    // An odd tag stands for a message whose receive is posted (bounded by the receive's size and
    // not queued); any other is queued if it fits, and refuses the stream otherwise.
    if ((header.tag & 1) == 0) {
      if (!braid::peerMsgFitsQueue(header.bytes, queued)) return 0;
      queued += header.bytes;
      FUZZ_CHECK(queued <= braid::kBootstrapMaxQueuedBytes);
    }
    data += headerBytes;
    size -= headerBytes;
  }
  return 0;
}
