#include "core/split.h"

#include <vector>

#include "core/child_comm.h"
#include "core/comm.h"
#include "core/init_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

// The exchange over the parent, then (for a member) the child's id. child is null on a
// NCCL_SPLIT_NOCOLOR rank, which takes part in the all-gather only.
ncclResult_t exchangeSplit(ncclComm* parent, ncclComm* child, SplitVote vote, ncclUniqueId* id) {
  std::vector<SplitVote> votes(parent->nranks_);
  vote.share = child != nullptr && child->config_.splitShare == 1 ? 1 : 0;
  votes[parent->rank_] = vote;
  NCCLCHECK(parent->bootstrap_->allGather(votes.data(), sizeof(SplitVote)));
  if (parentJoinsShareGroup(votes)) NCCLCHECK(ensureShareGroup(parent));
  if (child == nullptr) return ncclSuccess;
  if (vote.share != 0) NCCLCHECK(joinParentShareGroup(parent, child));
  return assignChild(parent, child, splitMembers(votes, vote.color), "ncclCommSplit", id);
}

}  // namespace

ncclResult_t commSplit(ncclComm_t parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
  initLoggingOnce();
  NCCLCHECK(commCheckParent(parent, "ncclCommSplit"));
  if (newcomm == nullptr) {
    WARN("ncclCommSplit: newcomm is NULL");
    return ncclInvalidArgument;
  }
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    WARN("ncclCommSplit: color is %d; it must be >= 0, or NCCL_SPLIT_NOCOLOR (%d) for no new communicator", color,
         NCCL_SPLIT_NOCOLOR);
    return ncclInvalidArgument;
  }
  *newcomm = nullptr;
  ncclComm* child = nullptr;
  if (color != NCCL_SPLIT_NOCOLOR) NCCLCHECK(newChildComm(parent, config, "ncclCommSplit", &child));
  *newcomm = child;
  const SplitVote vote{color, key, 0};
  return makeChild(
      parent, child, newcomm,
      [parent, child, vote](ncclUniqueId* id) { return exchangeSplit(parent, child, vote, id); }, parent->cudaDev_,
      "ncclCommSplit");
}

}  // namespace braid
