// ncclCommGetUniqueId and ncclCommGrow: a communicator of more ranks, in which the existing ranks keep
// their numbers and new ranks join.
//
// One existing rank (the coordinator) makes an id with commGetGrowId and hands it out of band to the
// joining ranks. Every existing rank then calls commGrow with the parent (the coordinator may pass
// its id, the others pass NULL) and rank -1; each joining rank calls it without a parent, with the id
// and its new rank. The existing ranks learn the id from the coordinator over the parent's bootstrap,
// and then all ranks run the usual init on it. The parent is not changed: destroy it when done.
#pragma once

#include <nccl.h>

namespace braid {

[[nodiscard]] ncclResult_t commGetGrowId(ncclComm_t parent, ncclUniqueId* id);
[[nodiscard]] ncclResult_t commGrow(ncclComm_t parent, int nRanks, const ncclUniqueId* id, int rank,
                                    ncclComm_t* newcomm, const ncclConfig_t* config);

}  // namespace braid
