// ncclCommShrink: the ranks of a communicator that are not in excludeRanksList call it (the
// excluded ones do not, and may be dead) and become a new communicator, in their parent order
// (child_ranks.h; configuration, GPU and unique id as child_comm.h makes them). Nothing is
// exchanged with excluded ranks. NCCL_SHRINK_ABORT first revokes the parent (its kernels, which
// may be waiting for a dead rank, are stopped); NCCL_SHRINK_DEFAULT expects a healthy parent and
// leaves it usable. Inside a group, the rendezvous waits for the outermost ncclGroupEnd.
// With config->shrinkShare the child joins the parent's share group, made now if the parent has
// none (core/share_group.h); not with NCCL_SHRINK_ABORT.
#pragma once

#include <nccl.h>

namespace braid {

[[nodiscard]] ncclResult_t commShrink(ncclComm_t parent, const int* excludeRanksList, int excludeRanksCount,
                                      ncclComm_t* newcomm, const ncclConfig_t* config, int shrinkFlags);

}  // namespace braid
