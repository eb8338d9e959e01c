#include "core/child_comm.h"

#include <algorithm>
#include <memory>

#include "bootstrap/bootstrap.h"
#include "bootstrap/tags.h"
#include "core/comm.h"
#include "core/comm_registry.h"
#include "core/group.h"
#include "core/init_internal.h"
#include "core/peer_info.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/log.h"
#include "util/thread_guard.h"

namespace braid {
ncclResult_t newChildComm(const ncclComm* parent, const ncclConfig_t* config, const char* caller, ncclComm** out) {
  auto child = std::make_unique<ncclComm>();
  NCCLCHECK(parseConfigInherited(config, parent->config_, caller, &child->config_));
  *out = child.release();
  commRegistryAdd(*out);
  return ncclSuccess;
}

ncclResult_t ensureShareGroup(ncclComm* parent) {
  if (parent->shareGroup_ != nullptr) return ncclSuccess;
  auto group = std::make_shared<ShareGroup>();
  if (parent->dataPath_ != nullptr) NCCLCHECK(parent->dataPath_->joinShareGroup(group));
  parent->shareGroup_ = std::move(group);
  return ncclSuccess;
}

ncclResult_t joinParentShareGroup(ncclComm* parent, ncclComm* child) {
  NCCLCHECK(ensureShareGroup(parent));
  child->shareGroup_ = parent->shareGroup_;
  return ncclSuccess;
}

ncclResult_t assignChild(ncclComm* parent, ncclComm* child, const std::vector<int>& members, const char* caller,
                         ncclUniqueId* id) {
  const auto me = std::find(members.begin(), members.end(), parent->rank_);
  if (me == members.end()) {
    WARN("%s: parent rank %d is not among the new communicator's ranks", caller, parent->rank_);
    return ncclInternalError;
  }
  if (me == members.begin()) {
    NCCLCHECK(bootstrapGetRootUniqueId(id));
    for (size_t i = 1; i < members.size(); i++) {
      NCCLCHECK(parent->bootstrap_->send(members[i], tags::kChildId, id, sizeof(*id)));
    }
  } else {
    NCCLCHECK(parent->bootstrap_->recv(members.front(), tags::kChildId, id, sizeof(*id)));
  }
  child->rank_ = static_cast<int>(me - members.begin());
  child->nranks_ = static_cast<int>(members.size());
  child->commHash_ = hashBytes(id, sizeof(*id));
  INFO(kLogInit, "%s: parent comm %p rank %d -> comm %p rank %d of %d", caller, static_cast<void*>(parent),
       parent->rank_, static_cast<void*>(child), child->rank_, child->nranks_);
  return ncclSuccess;
}

ncclResult_t rendezvousChild(int cudaDev, ncclComm* child, const ncclUniqueId& id, const char* caller) {
  // The parent's GPU, also on a group or background thread (which starts without one); the
  // caller's comes back.
  ScopedDevice device(cudaDev);
  if (!device.ok()) {
    WARN("%s: cannot make the parent's device %d current", caller, cudaDev);
    return ncclUnhandledCudaError;
  }
  int computeCap = 0;
  NCCLCHECK(queryLocalGpu(child, &computeCap));
  return finishInit(child, {id}, computeCap);
}

namespace {

// The parent's part of a nonblocking parent's split or shrink, on a background thread: the parent
// reports ncclInProgress from before the thread starts (beginExchange) until it ends (endExchange).
void beginExchange(ncclComm* parent) {
  parent->background_.beginExchange();
  ncclResult_t expected = ncclSuccess;  // a revoked parent may keep its dead peer's error
  (void)parent->asyncError_.compare_exchange_strong(expected, ncclInProgress);
}

void endExchange(ncclComm* parent, ncclResult_t result) {
  ncclResult_t expected = ncclInProgress;
  (void)parent->asyncError_.compare_exchange_strong(expected, result);
  parent->background_.endExchange();
}

ncclResult_t exchangeInBackground(ncclComm* parent, const std::function<ncclResult_t(ncclUniqueId*)>& exchange,
                                  int cudaDev, ncclUniqueId* id) {
  ScopedDevice device(cudaDev);  // the parent's data path may join a share group
  // Guarded here, not only on the thread: the parent's exchange must end whatever happens.
  const ncclResult_t result = guardThread("child id exchange", [&] { return exchange(id); });
  endExchange(parent, result);
  return result;
}

}  // namespace

ncclResult_t makeChild(ncclComm* parent, ncclComm* child, ncclComm_t* newcomm,
                       const std::function<ncclResult_t(ncclUniqueId*)>& exchange, int cudaDev, const char* caller) {
  GroupContext& group = GroupContext::current();
  if (group.active()) {
    // The caller has the handle now; the child's rank and size are known at the outermost End.
    group.deferInit(
        parent,
        [child, exchange, cudaDev, caller] {
          ncclUniqueId id;
          NCCLCHECK(exchange(&id));
          return child == nullptr ? ncclSuccess : rendezvousChild(cudaDev, child, id, caller);
        },
        [child] {
          if (child != nullptr) child->watch_.abortFlag().raise(watch::kAbortHostWaits);
        });
    return ncclSuccess;
  }
  if (parent->config_.blocking == 0) {
    beginExchange(parent);
    if (child == nullptr) {
      // Without a thread to spare the exchange runs in this call, and ends the parent's exchange as usual.
      parent->background_.startExchange("the child communicator's id exchange", [parent, exchange, cudaDev] {
        ncclUniqueId id;
        (void)guardThread("child id exchange", [&] { return exchangeInBackground(parent, exchange, cudaDev, &id); });
      });
      return ncclInProgress;
    }
    return startInBackground(child, [parent, child, exchange, cudaDev, caller] {
      ncclUniqueId id;
      NCCLCHECK(exchangeInBackground(parent, exchange, cudaDev, &id));
      return rendezvousChild(cudaDev, child, id, caller);
    });
  }
  ncclUniqueId id;
  ncclResult_t result = exchange(&id);
  if (result == ncclSuccess && child != nullptr) {
    // Nonblocking child: the parent's part is done; the child's own rendezvous goes on in the background.
    if (child->config_.blocking == 0) {
      return startInBackground(child,
                               [child, id, cudaDev, caller] { return rendezvousChild(cudaDev, child, id, caller); });
    }
    result = rendezvousChild(cudaDev, child, id, caller);
  }
  if (result != ncclSuccess && child != nullptr) {
    freeComm(child);
    *newcomm = nullptr;
  }
  return result;
}

}  // namespace braid
