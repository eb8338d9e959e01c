// ncclCommSplit. The parent's ranks exchange (color, key) over its bootstrap; the ranks of one
// color, ordered by key and then by parent rank, become a new communicator. Its first rank makes a
// unique id (a root thread of its own, never NCCL_COMM_ID's address, which the parent may be using)
// and sends it to the others over the parent's bootstrap; then every member runs the usual init on
// the parent's GPU. The child takes the parent's configuration where `config` is NULL or leaves a
// field undefined. Inside a group, everything after the argument checks waits for the outermost
// ncclGroupEnd, since this thread may drive several ranks of the parent. NCCL_SPLIT_NOCOLOR ranks
// take part in the exchange and get NULL. config->splitShare is accepted, but the child makes its
// own connections and buffers: sharing the parent's is not implemented.
#pragma once

#include <nccl.h>

#include "core/split_plan.h"

namespace braid {

[[nodiscard]] ncclResult_t commSplit(ncclComm_t parent, int color, int key, ncclComm_t* newcomm,
                                     const ncclConfig_t* config);

}  // namespace braid
