// Who is in which communicator after ncclCommSplit or ncclCommShrink, and in which order (pure;
// split.h and shrink.h do the rest).
#pragma once

#include <cstdint>
#include <vector>

namespace braid {

// One parent rank's arguments, as the parent's ranks exchange them.
struct SplitVote {
  int32_t color;
  int32_t key;
  int32_t share = 0;  // 1: this rank's new communicator asks to share connections (splitShare)
};

// Whether the parent joins a share group now (core/share_group.h), the same answer on every rank:
// when some rank's child asks to share (a NCCL_SPLIT_NOCOLOR rank's parent joins too, so that the
// parent launches alike on every rank).
bool parentJoinsShareGroup(const std::vector<SplitVote>& votes);

// The parent ranks of `color`'s communicator, in their new rank order (key, then parent rank);
// empty for NCCL_SPLIT_NOCOLOR.
std::vector<int> splitMembers(const std::vector<SplitVote>& votes, int color);

// The parent ranks that stay after ncclCommShrink, in order: those of [0, nranks) not excluded.
std::vector<int> shrinkMembers(int nranks, const std::vector<int>& excluded);

}  // namespace braid
