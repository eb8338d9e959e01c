// What a bootstrap root reads from every connection that passed the handshake: a RootCheckIn,
// parsed by parseRootCheckIn. A check-in it accepts then sizes the job (startJob in root.cc): the
// harness repeats that arithmetic and checks that every index it yields is in range.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/wire.h"
#include "fuzz_check.h"
#include "util/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  braid::RootCheckIn in{};
  std::string why;
  if (braid::parseRootCheckIn(data, size, &in, &why) != ncclSuccess) {
    FUZZ_CHECK(!why.empty());
    if (size == sizeof(in)) FUZZ_CHECK(in.host[sizeof(in.host) - 1] == '\0');
    (void)braid::peerText(in.host, sizeof(in.host));  // a refusal names the sender's host
    return 0;
  }
  FUZZ_CHECK(size == sizeof(in) && why.empty());
  FUZZ_CHECK(std::memchr(in.host, '\0', sizeof(in.host)) != nullptr);
  FUZZ_CHECK(in.nranks >= 1 && in.nranks <= braid::kBootstrapMaxRanks);
  FUZZ_CHECK(in.nroots >= 1 && in.nroots <= in.nranks && in.root >= 0 && in.root < in.nroots);
  FUZZ_CHECK(in.rank >= 0 && in.rank < in.nranks);
  // The job as the root sizes it from its first check-in.
  const braid::RankBlock block = braid::rootBlock(in.nranks, in.nroots, in.root);
  FUZZ_CHECK(block.begin >= 0 && block.begin < block.end && block.end <= in.nranks);
  const int stitchRank = block.end % in.nranks;
  FUZZ_CHECK(stitchRank >= 0 && stitchRank < in.nranks);
  const int owner = braid::rootOfRank(in.nranks, in.nroots, in.rank);
  FUZZ_CHECK(owner >= 0 && owner < in.nroots);
  const braid::RankBlock ownerBlock = braid::rootBlock(in.nranks, in.nroots, owner);
  FUZZ_CHECK(in.rank >= ownerBlock.begin && in.rank < ownerBlock.end);
  const int timeoutMs = std::clamp(in.timeoutMs, 1, braid::kBootstrapMaxRootTimeoutMs);
  FUZZ_CHECK(timeoutMs >= 1);
  (void)braid::peerText(in.host, sizeof(in.host));
  (void)braid::socketAddressToString(in.listen);
  return 0;
}
