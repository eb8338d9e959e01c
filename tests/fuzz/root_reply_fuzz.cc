// What a rank reads from its bootstrap root: one framed RootReply (a length word, then the
// struct), parsed by parseRootReplyFrame. A failed rendezvous prints the root's message.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/wire.h"
#include "fuzz_check.h"
#include "util/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  braid::RootReply reply{};
  ncclResult_t result = ncclSuccess;
  std::string why;
  if (braid::parseRootReplyFrame(data, size, &reply, &result, &why) != ncclSuccess) {
    FUZZ_CHECK(!why.empty());
    return 0;
  }
  FUZZ_CHECK(size == sizeof(uint64_t) + sizeof(reply));
  FUZZ_CHECK(result >= ncclSuccess && result < ncclNumResults);
  FUZZ_CHECK(std::memchr(reply.message, '\0', sizeof(reply.message)) != nullptr);
  const std::string shown = braid::peerText(reply.message, sizeof(reply.message), sizeof(reply.message));
  FUZZ_CHECK(shown.size() <= 4 * sizeof(reply.message));
  if (result == ncclSuccess) (void)braid::socketAddressToString(reply.next);
  return 0;
}
