#include "core/grow.h"

#include <cstring>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/comm.h"
#include "core/init_internal.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {
namespace {

constexpr const char* kCaller = "ncclCommGrow";

// What each existing rank contributes to the exchange over the parent: the id, from the coordinator.
struct GrowVote {
  int32_t hasId;
  int32_t reserved;
  ncclUniqueId id;
};

// The id the coordinator made, learned by every existing rank over the parent's bootstrap. Exactly
// one rank may bring one (several ranks bringing the same id is the same coordinator's id passed on
// out of band, which is allowed too).
ncclResult_t agreeOnId(ncclComm* parent, const ncclUniqueId* given, ncclUniqueId* out) {
  std::vector<GrowVote> votes(parent->nranks_);
  GrowVote& mine = votes[parent->rank_];
  std::memset(&mine, 0, sizeof(mine));
  if (given != nullptr) {
    mine.hasId = 1;
    mine.id = *given;
  } else if (parent->pendingGrowId_ != nullptr) {
    mine.hasId = 1;
    mine.id = *parent->pendingGrowId_;
  }
  NCCLCHECK(parent->bootstrap_->allGather(votes.data(), sizeof(GrowVote)));
  int from = -1;
  for (int r = 0; r < parent->nranks_; ++r) {
    if (votes[r].hasId == 0) continue;
    if (from >= 0 && std::memcmp(&votes[r].id, &votes[from].id, sizeof(ncclUniqueId)) != 0) {
      WARN("%s: ranks %d and %d of the parent bring different ids; one rank makes the id with ncclCommGetUniqueId",
           kCaller, from, r);
      return ncclInvalidUsage;
    }
    if (from < 0) from = r;
  }
  if (from < 0) {
    WARN("%s: no rank of the parent (%d ranks) brings an id: one must call ncclCommGetUniqueId first", kCaller,
         parent->nranks_);
    return ncclInvalidUsage;
  }
  *out = votes[from].id;
  parent->pendingGrowId_.reset();  // used once
  return ncclSuccess;
}

ncclResult_t growExisting(ncclComm* parent, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                          const ncclConfig_t* config) {
  NCCLCHECK(commCheckUsable(parent, kCaller));
  if (rank != -1) {
    WARN("%s: rank is %d; ranks of the parent keep their numbers and pass -1 (rank %d here)", kCaller, rank,
         parent->rank_);
    return ncclInvalidArgument;
  }
  if (nRanks <= parent->nranks_) {
    WARN("%s: nRanks is %d; growing a communicator of %d ranks needs more", kCaller, nRanks, parent->nranks_);
    return ncclInvalidArgument;
  }
  CommConfig parsed;
  NCCLCHECK(parseConfigInherited(config, parent->config_, kCaller, &parsed));
  ncclUniqueId agreed;
  NCCLCHECK(agreeOnId(parent, id, &agreed));
  INFO(kLogInit, "%s: rank %d of %d grows to %d ranks", kCaller, parent->rank_, parent->nranks_, nRanks);
  return commInitRankParsed(newcomm, nRanks, &agreed, 1, parent->rank_, parsed, kCaller);
}

ncclResult_t growJoining(int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                         const ncclConfig_t* config) {
  if (id == nullptr) {
    WARN("%s: a joining rank (comm NULL) needs the id the coordinator made with ncclCommGetUniqueId", kCaller);
    return ncclInvalidArgument;
  }
  if (rank < 0 || rank >= nRanks) {
    WARN("%s: rank %d of a joining rank is outside [0, nRanks = %d)", kCaller, rank, nRanks);
    return ncclInvalidArgument;
  }
  CommConfig parsed;
  NCCLCHECK(parseConfig(config, kCaller, &parsed));
  return commInitRankParsed(newcomm, nRanks, id, 1, rank, parsed, kCaller);
}

}  // namespace

ncclResult_t commGetGrowId(ncclComm_t parent, ncclUniqueId* id) {
  initLoggingOnce();
  NCCLCHECK(commCheckUsable(parent, "ncclCommGetUniqueId"));
  if (id == nullptr) {
    WARN("ncclCommGetUniqueId: uniqueId is NULL");
    return ncclInvalidArgument;
  }
  if (parent->pendingGrowId_ != nullptr) {
    WARN("ncclCommGetUniqueId: rank %d already made an id that no ncclCommGrow has used yet; an id serves one grow",
         parent->rank_);
    return ncclInvalidUsage;
  }
  auto made = std::make_unique<ncclUniqueId>();
  NCCLCHECK(bootstrapGetUniqueId(made.get()));
  *id = *made;
  parent->pendingGrowId_ = std::move(made);
  return ncclSuccess;
}

ncclResult_t commGrow(ncclComm_t parent, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                      const ncclConfig_t* config) {
  initLoggingOnce();
  if (newcomm == nullptr) {
    WARN("%s: newcomm is NULL", kCaller);
    return ncclInvalidArgument;
  }
  *newcomm = nullptr;
  if (parent != nullptr) return growExisting(parent, nRanks, id, rank, newcomm, config);
  return growJoining(nRanks, id, rank, newcomm, config);
}

}  // namespace braid
