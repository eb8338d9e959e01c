// The teams of NCCL's device API, computed on the host from what the ranks told each other at init.
//
// The LSA (load/store accessible) team of a rank is its block of consecutive world ranks that share
// its host: NCCL's teams are strided rank ranges, so a communicator whose hosts hold interleaved or
// unequal blocks of ranks has LSA teams of one rank. The rail team is the ranks with the same index
// in every LSA team.
#pragma once

#include <vector>

#include "core/peer_info.h"

namespace braid {

struct LsaLayout {
  int size = 1;  // ranks per LSA team (the same for every team)
  int rank = 0;  // the caller's index in its LSA team
};

// `peers` indexed by rank; `rank` is the caller's.
LsaLayout lsaLayoutOf(const std::vector<PeerInfo>& peers, int rank);

}  // namespace braid
