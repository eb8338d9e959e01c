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

// The child's rendezvous: `members` are parent ranks in child rank order, the calling parent rank
// among them. On the caller's thread or a group thread.
[[nodiscard]] ncclResult_t joinChild(ncclComm* parent, ncclComm* child, const std::vector<int>& members,
                                     const char* caller);

// Runs `job` now, or inside a group at the outermost ncclGroupEnd (then a failure elsewhere in the
// group cancels the child's rendezvous). A failed job run now frees `child` (may be null) and
// clears *newcomm.
[[nodiscard]] ncclResult_t runOrDefer(ncclComm* child, ncclComm_t* newcomm, std::function<ncclResult_t()> job);

}  // namespace braid
