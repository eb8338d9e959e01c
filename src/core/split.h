// ncclCommSplit. The parent's ranks exchange (color, key) over its bootstrap; the ranks of one
// color, ordered by key and then by parent rank (child_ranks.h), become a new communicator
// (child_comm.h: configuration, GPU, unique id). Inside a group, everything after the argument
// checks waits for the outermost ncclGroupEnd, since this thread may drive several ranks of the
// parent. NCCL_SPLIT_NOCOLOR ranks take part in the exchange and get NULL. config->splitShare is
// accepted, but the child makes its own connections and buffers (an INFO line says so): sharing the
// parent's is not implemented.
#pragma once

#include <nccl.h>

#include "core/child_ranks.h"

namespace braid {

[[nodiscard]] ncclResult_t commSplit(ncclComm_t parent, int color, int key, ncclComm_t* newcomm,
                                     const ncclConfig_t* config);

}  // namespace braid
