// ncclCommSplit's and ncclCommShrink's rank assignment (core/child_ranks.h): the ranks of a color
// ordered by key, ties by parent rank; NCCL_SPLIT_NOCOLOR ranks in no communicator; a shrink keeps
// the other ranks in order.
#include "core/child_ranks.h"

#include <gtest/gtest.h>
#include <nccl.h>

#include <vector>

namespace braid {
namespace {

TEST(SplitMembers, ByColorThenKeyThenParentRank) {
  //                               rank: 0       1       2       3       4        5
  const std::vector<SplitVote> votes = {{0, 5}, {1, 0}, {0, 1}, {1, 0}, {0, 5}, {NCCL_SPLIT_NOCOLOR, 0}};
  EXPECT_EQ((std::vector<int>{2, 0, 4}), splitMembers(votes, 0));
  EXPECT_EQ((std::vector<int>{1, 3}), splitMembers(votes, 1));  // equal keys keep parent order
  EXPECT_TRUE(splitMembers(votes, NCCL_SPLIT_NOCOLOR).empty());
  EXPECT_TRUE(splitMembers(votes, 7).empty());
}

TEST(SplitMembers, NegativeKeysAndOneColorReverseTheRanks) {
  std::vector<SplitVote> votes;
  for (int r = 0; r < 8; r++) votes.push_back({3, -r});
  EXPECT_EQ((std::vector<int>{7, 6, 5, 4, 3, 2, 1, 0}), splitMembers(votes, 3));
}

// The parent joins a share group when some rank's child asks (whether or not the parent has run
// operations); the votes are the same on every rank, so is the answer.
TEST(ParentJoinsShareGroup, WhenAChildAsks) {
  std::vector<SplitVote> votes(4, SplitVote{0, 0});
  EXPECT_FALSE(parentJoinsShareGroup(votes)) << "nobody asks";
  votes[2].share = 1;
  EXPECT_TRUE(parentJoinsShareGroup(votes)) << "one child asks (the others may be NCCL_SPLIT_NOCOLOR)";
}

TEST(ShrinkMembers, TheOthersInOrder) {
  EXPECT_EQ((std::vector<int>{0, 1, 2}), shrinkMembers(4, {3}));
  EXPECT_EQ((std::vector<int>{1, 3}), shrinkMembers(4, {2, 0, 2}));
  EXPECT_EQ((std::vector<int>{0, 1}), shrinkMembers(2, {}));
}

}  // namespace
}  // namespace braid
