// What the window layer knows of its communicator: a narrow view that the API layer fills in, so
// that window/ never sees the communicator itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "util/rank_place.h"

namespace braid::net {
class Network;
}

namespace braid::window {

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
  // Whether a rank of the LSA team runs in another process (its memory must then be exportable).
  bool anyLsaPeerProcess() const {
    for (int i = 0; i < lsaSize; ++i) {
      if (!sameProcess(lsaBase() + i)) return true;
    }
    return false;
  }
  // "rank R (GPU D)", for messages.
  std::string me() const { return "rank " + std::to_string(rank) + " (GPU " + std::to_string(cudaDev) + ")"; }
};

}  // namespace braid::window
