// What the window layer knows of its communicator: a narrow view that the API layer fills in, so
// that window/ never sees the communicator itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace braid::net {
class Network;
}

namespace braid::window {

// Where a rank runs, from what the ranks told each other at init.
struct RankPlace {
  uint64_t hostHash = 0;  // same value on ranks of one host (NCCL_HOSTID overrides)
  uint64_t pidHash = 0;   // same value on ranks of one process
  int cudaDev = -1;       // its device ordinal in its own process
  // Its process as it named itself (core/peer_info.h): only the processes of the ranks on this
  // host may send descriptors to this rank's Unix socket (transport/uds.h).
  int32_t pid = 0;
  uint64_t pidSpace = 0;
};

struct WindowContext {
  int rank = 0;
  int nranks = 0;
  int cudaDev = -1;
  uint64_t commHash = 0;
  Bootstrap* bootstrap = nullptr;
  const std::atomic<int>* abortFlag = nullptr;
  std::vector<RankPlace> places;  // by world rank
  // The LSA team: world ranks lsaBase .. lsaBase + lsaSize - 1, the caller's index lsaRank.
  int lsaSize = 1;
  int lsaRank = 0;
  // One-sided resources (ncclConfig_t numRmaCtx, numRmaSig; 0 contexts: one-sided calls refused).
  int numRmaCtx = 1;
  int numRmaSig = 1;
  // Whether an asynchronous error (a dead peer) was reported: waits stop at it.
  std::function<bool()> peerFailed;
  // The communicator's network to other hosts, opened at the first call.
  std::function<ncclResult_t(net::Network**)> openNetwork;
  // Makes `error` the communicator's asynchronous error (found off the caller's thread).
  std::function<void(ncclResult_t)> asyncError;

  int lsaBase() const { return rank - lsaRank; }
  bool inLsa(int worldRank) const { return worldRank >= lsaBase() && worldRank < lsaBase() + lsaSize; }
  int lsaOf(int worldRank) const { return worldRank - lsaBase(); }
  bool sameProcess(int worldRank) const { return places[worldRank].pidHash == places[rank].pidHash; }
};

}  // namespace braid::window
