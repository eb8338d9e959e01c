// Entry of every collective call: checks, queues on the communicator's data path, and (outside a
// group, or at the outermost ncclGroupEnd) connects and launches.
#pragma once

#include <nccl.h>

#include "launch/coll_task.h"

struct ncclComm;

namespace braid {

[[nodiscard]] ncclResult_t enqueueColl(ncclComm* comm, const CollTask& task, const char* caller);

}  // namespace braid
