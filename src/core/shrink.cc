#include "core/shrink.h"

#include <vector>

#include "core/child_comm.h"
#include "core/child_ranks.h"
#include "core/comm.h"
#include "core/init_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

constexpr const char* kCaller = "ncclCommShrink";

// The excluded ranks, checked: each a rank of the parent, and not the caller.
ncclResult_t readExcluded(const ncclComm* parent, const int* list, int count, std::vector<int>* out) {
  if (count < 0 || (count > 0 && list == nullptr)) {
    WARN("%s: excludeRanksList is %s with excludeRanksCount %d", kCaller, list == nullptr ? "NULL" : "given", count);
    return ncclInvalidArgument;
  }
  out->assign(list, list + count);
  for (int r : *out) {
    if (r < 0 || r >= parent->nranks_) {
      WARN("%s: excludeRanksList holds rank %d, not a rank of the communicator (nranks %d)", kCaller, r,
           parent->nranks_);
      return ncclInvalidArgument;
    }
    if (r == parent->rank_) {
      WARN("%s: rank %d is in excludeRanksList; excluded ranks must not call ncclCommShrink", kCaller, r);
      return ncclInvalidArgument;
    }
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t commShrink(ncclComm_t parent, const int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                        const ncclConfig_t* config, int shrinkFlags) {
  initLoggingOnce();
  NCCLCHECK(commCheckParent(parent, kCaller));
  if (newcomm == nullptr) {
    WARN("%s: newcomm is NULL", kCaller);
    return ncclInvalidArgument;
  }
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    WARN("%s: shrinkFlags is %d; it must be NCCL_SHRINK_DEFAULT (0) or NCCL_SHRINK_ABORT (1)", kCaller, shrinkFlags);
    return ncclInvalidArgument;
  }
  *newcomm = nullptr;
  std::vector<int> excluded;
  NCCLCHECK(readExcluded(parent, excludeRanksList, excludeRanksCount, &excluded));
  ncclComm* child = nullptr;
  NCCLCHECK(newChildComm(parent, config, kCaller, &child));
  *newcomm = child;
  ncclResult_t prepared = shrinkFlags == NCCL_SHRINK_ABORT ? revokeComm(parent) : ncclSuccess;
  if (prepared == ncclSuccess && child->config_.shrinkShare == 1) {
    if (shrinkFlags == NCCL_SHRINK_ABORT) {
      // The revoked parent's kernels left its connections in the middle of an operation.
      INFO(kLogInit | kLogEnv, "%s: shrinkShare is ignored with NCCL_SHRINK_ABORT: the new communicator shares nothing",
           kCaller);
    } else {
      prepared = joinParentShareGroup(parent, child);
    }
  }
  if (prepared != ncclSuccess) {
    freeComm(child);
    *newcomm = nullptr;
    return prepared;
  }
  std::vector<int> members = shrinkMembers(parent->nranks_, excluded);
  return makeChild(
      parent, child, newcomm,
      [parent, child, members](ncclUniqueId* id) { return assignChild(parent, child, members, kCaller, id); },
      parent->cudaDev_, kCaller);
}

}  // namespace braid
