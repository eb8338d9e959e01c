// The signal memory of one rank (its "pad"): 64-bit words that peers of its host update through
// their flat mapping of it, and that its own streams wait on (pure arithmetic here, tested on any
// machine).
//
// Per (context, signal index, peer rank), in three regions of nCtx * nSig * nranks words each:
//   counts       eager signals from peer: peer copies its running count there (a number it keeps on
//                the host) after its data; waits compare against counts kept here on the host;
//   graphCounts  signals from peer's CUDA graphs: peer adds 1 after its data (a one-thread kernel,
//                an atomic add), and a wait in a graph of this rank waits for opCnt and subtracts
//                it again, so that every replay finds the word as the first run did;
//   stage        local only: the count this rank sends to peer next, written by a stream memory
//                operation and copied to the peer by the copy engine.
#pragma once

#include <cstdint>

namespace braid::window {

struct PadLayout {
  int nCtx = 1;
  int nSig = 1;
  int nranks = 1;

  uint64_t words() const { return static_cast<uint64_t>(nCtx) * nSig * nranks; }
  uint64_t index(int ctx, int sig, int rank) const { return (static_cast<uint64_t>(ctx) * nSig + sig) * nranks + rank; }
  // Byte offsets in the pad.
  uint64_t count(int ctx, int sig, int rank) const { return 8 * index(ctx, sig, rank); }
  uint64_t graphCount(int ctx, int sig, int rank) const { return 8 * (words() + index(ctx, sig, rank)); }
  uint64_t stage(int ctx, int sig, int rank) const { return 8 * (2 * words() + index(ctx, sig, rank)); }
  uint64_t bytes() const { return uint64_t{24} * words(); }
};

// A pad of more than this is refused (a configuration with millions of contexts or signals).
constexpr uint64_t kMaxPadBytes = uint64_t{1} << 30;

}  // namespace braid::window
