#include "core/child_ranks.h"

#include <nccl.h>

#include <algorithm>

namespace braid {

bool parentJoinsShareGroup(const std::vector<SplitVote>& votes) {
  for (const SplitVote& v : votes) {
    if (v.share != 0) return true;
  }
  return false;
}

std::vector<int> splitMembers(const std::vector<SplitVote>& votes, int color) {
  std::vector<int> members;
  if (color == NCCL_SPLIT_NOCOLOR) return members;
  for (int r = 0; r < static_cast<int>(votes.size()); r++) {
    if (votes[r].color == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return votes[a].key < votes[b].key; });
  return members;
}

std::vector<int> shrinkMembers(int nranks, const std::vector<int>& excluded) {
  std::vector<int> members;
  for (int r = 0; r < nranks; r++) {
    if (std::find(excluded.begin(), excluded.end(), r) == excluded.end()) members.push_back(r);
  }
  return members;
}

}  // namespace braid
