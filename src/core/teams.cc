#include "core/teams.h"

namespace braid {

LsaLayout lsaLayoutOf(const std::vector<PeerInfo>& peers, int rank) {
  const int nranks = static_cast<int>(peers.size());
  LsaLayout layout;
  if (nranks == 0 || rank < 0 || rank >= nranks) return layout;
  int block = 1;
  while (block < nranks && peers[block].hostHash == peers[0].hostHash) ++block;
  if (nranks % block != 0) return LsaLayout{1, 0};
  for (int first = 0; first < nranks; first += block) {
    for (int r = first; r < first + block; ++r) {
      if (peers[r].hostHash != peers[first].hostHash) return LsaLayout{1, 0};
    }
    // A later block on a host seen before would make that host's ranks two teams: not one LSA team.
    for (int earlier = 0; earlier < first; earlier += block) {
      if (peers[earlier].hostHash == peers[first].hostHash) return LsaLayout{1, 0};
    }
  }
  layout.size = block;
  layout.rank = rank % block;
  return layout;
}

}  // namespace braid
