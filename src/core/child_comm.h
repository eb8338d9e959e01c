// What ncclCommSplit and ncclCommShrink share: a communicator made from a parent's ranks. The
// child takes the parent's configuration where the given one is NULL or leaves a field undefined,
// runs on the parent's GPU, and gets its unique id from its first member over the parent's
// bootstrap (a root thread of that member's process, never NCCL_COMM_ID's address, which the
// parent may hold). Only members talk to each other, so ranks outside the child (dead ones
// included) are never waited for.
#pragma once

#include <nccl.h>

#include <functional>
#include <vector>

struct ncclComm;

namespace braid {

// A new child handle (state kInitializing, registered) with its configuration.
[[nodiscard]] ncclResult_t newChildComm(const ncclComm* parent, const ncclConfig_t* config, const char* caller,
                                        ncclComm** out);

// The parent's share group (core/share_group.h), made now if it has none. A parent that has run
// operations brings its connections and launch order into it (DataPathBase::joinShareGroup).
[[nodiscard]] ncclResult_t ensureShareGroup(ncclComm* parent);
// A child that asks to share connections (splitShare, shrinkShare) joins its parent's share group,
// made now if need be. Its ranks confirm at rendezvous that they all joined.
[[nodiscard]] ncclResult_t joinParentShareGroup(ncclComm* parent, ncclComm* child);

// The parent's part, for a member: the child's unique id from its first member over the parent's
// bootstrap, and the child's rank and size. `members` are parent ranks in child rank order, the
// calling parent rank among them.
[[nodiscard]] ncclResult_t assignChild(ncclComm* parent, ncclComm* child, const std::vector<int>& members,
                                       const char* caller, ncclUniqueId* id);

// Makes the child: `exchange` (the parent's part: split's all-gather, then assignChild for a member;
// it fills the id) and the child's rendezvous on GPU cudaDev.
//   - Inside a group: both at the outermost ncclGroupEnd (a failure elsewhere in the group cancels
//     the child's rendezvous).
//   - A nonblocking parent (as in NCCL, the parent's config decides): both in the background, so
//     that one thread can split several communicators without a group (ncclInProgress). The
//     exchange runs on the child's background thread (a NCCL_SPLIT_NOCOLOR rank's on the parent's
//     exchange thread, core/background_work.h); the parent reports ncclInProgress until it is done, and refuses other
//     calls meanwhile, so nothing else uses its bootstrap. A failed exchange becomes the parent's asynchronous error
//     (and the child's), as in NCCL.
//   - A blocking parent: the exchange now; the rendezvous too, or on the background thread of a
//     nonblocking child (ncclInProgress).
// A failure returned here frees `child` (null on a NCCL_SPLIT_NOCOLOR rank) and clears *newcomm.
[[nodiscard]] ncclResult_t makeChild(ncclComm* parent, ncclComm* child, ncclComm_t* newcomm,
                                     const std::function<ncclResult_t(ncclUniqueId*)>& exchange, int cudaDev,
                                     const char* caller);

}  // namespace braid
