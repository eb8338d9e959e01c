// Who is in which communicator after ncclCommSplit (pure; split.h does the rest).
#pragma once

#include <cstdint>
#include <vector>

namespace braid {

// One parent rank's arguments, as the parent's ranks exchange them.
struct SplitVote {
  int32_t color;
  int32_t key;
};

// The parent ranks of `color`'s communicator, in their new rank order (key, then parent rank);
// empty for NCCL_SPLIT_NOCOLOR.
std::vector<int> splitMembers(const std::vector<SplitVote>& votes, int color);

}  // namespace braid
