// ncclCommSplit. The parent's ranks exchange (color, key) over its bootstrap; the ranks of one
// color, ordered by key and then by parent rank (child_ranks.h), become a new communicator
// (child_comm.h: configuration, GPU, unique id). Inside a group, everything after the argument
// checks waits for the outermost ncclGroupEnd, since this thread may drive several ranks of the
// parent. NCCL_SPLIT_NOCOLOR ranks take part in the exchange and get NULL. With config->splitShare
// the child joins the parent's share group (core/share_group.h); the exchange also decides, the
// same way on every rank, whether the parent is in it (parentJoinsShareGroup).
#pragma once

#include <nccl.h>

#include "core/child_ranks.h"

namespace braid {

[[nodiscard]] ncclResult_t commSplit(ncclComm_t parent, int color, int key, ncclComm_t* newcomm,
                                     const ncclConfig_t* config);

}  // namespace braid
