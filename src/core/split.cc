#include "core/split.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <memory>

#include "bootstrap/bootstrap.h"
#include "core/comm.h"
#include "core/comm_registry.h"
#include "core/group.h"
#include "core/init_internal.h"
#include "core/peer_info.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

// The child's unique id, from its first rank to the others over the parent's bootstrap.
constexpr int kSplitIdTag = 0x42530001;

// The collective part, on the caller's thread or a group thread: the exchange over the parent,
// then (for a member) the child's rendezvous. child is null on a NCCL_SPLIT_NOCOLOR rank.
ncclResult_t runSplit(ncclComm* parent, ncclComm* child, SplitVote vote) {
  std::vector<SplitVote> votes(parent->nranks_);
  votes[parent->rank_] = vote;
  NCCLCHECK(parent->bootstrap_->allGather(votes.data(), sizeof(SplitVote)));
  if (child == nullptr) return ncclSuccess;
  const std::vector<int> members = splitMembers(votes, vote.color);
  const auto me = std::find(members.begin(), members.end(), parent->rank_);
  ncclUniqueId id;
  if (me == members.begin()) {
    NCCLCHECK(bootstrapGetRootUniqueId(&id));
    for (size_t i = 1; i < members.size(); i++) {
      NCCLCHECK(parent->bootstrap_->send(members[i], kSplitIdTag, &id, sizeof(id)));
    }
  } else {
    NCCLCHECK(parent->bootstrap_->recv(members.front(), kSplitIdTag, &id, sizeof(id)));
  }
  child->rank_ = static_cast<int>(me - members.begin());
  child->nranks_ = static_cast<int>(members.size());
  child->commHash_ = hashBytes(&id, sizeof(id));
  INFO(kLogInit, "ncclCommSplit: parent comm %p rank %d (color %d, key %d) -> comm %p rank %d of %d",
       static_cast<void*>(parent), parent->rank_, vote.color, vote.key, static_cast<void*>(child), child->rank_,
       child->nranks_);
  // The parent's GPU, also on a group thread (which starts on device 0); the caller's comes back.
  ScopedDevice device(parent->cudaDev_);
  if (!device.ok()) {
    WARN("ncclCommSplit: cannot make the parent's device %d current", parent->cudaDev_);
    return ncclUnhandledCudaError;
  }
  int computeCap = 0;
  NCCLCHECK(queryLocalGpu(child, &computeCap));
  return finishInit(child, {id}, computeCap);
}

}  // namespace

ncclResult_t commSplit(ncclComm_t parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
  initLoggingOnce();
  NCCLCHECK(commCheckUsable(parent, "ncclCommSplit"));
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
  std::unique_ptr<ncclComm> made;
  if (color != NCCL_SPLIT_NOCOLOR) {
    made = std::make_unique<ncclComm>();
    NCCLCHECK(parseConfigInherited(config, parent->config_, "ncclCommSplit", &made->config_));
  }
  ncclComm* child = made.release();
  if (child != nullptr) {
    commRegistryAdd(child);
    *newcomm = child;
  }
  const SplitVote vote{color, key};
  GroupContext& group = GroupContext::current();
  if (group.active()) {
    // The caller gets the handle now; rank and size are known at the outermost ncclGroupEnd.
    // A failed job elsewhere in the group cancels the child's rendezvous; the parent is left alone
    // (its exchange then ends at NCCL_BOOTSTRAP_TIMEOUT if a rank never comes).
    group.deferInit([parent, child, vote] { return runSplit(parent, child, vote); },
                    [child] {
                      if (child != nullptr) child->abortFlag_ = 1;
                    });
    return ncclSuccess;
  }
  ncclResult_t result = runSplit(parent, child, vote);
  if (result != ncclSuccess && child != nullptr) {
    // A failed blocking split leaves no child behind.
    freeComm(child);
    *newcomm = nullptr;
  }
  return result;
}

}  // namespace braid
