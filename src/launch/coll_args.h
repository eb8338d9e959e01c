// Argument checks of the collective entry points. A refused call returns ncclInvalidArgument with
// one WARN that names the argument, and nothing is queued or launched.
#pragma once

#include <nccl.h>

#include "launch/coll_task.h"

struct ncclComm;

namespace braid {

[[nodiscard]] ncclResult_t checkCollArgs(const ncclComm* comm, const CollTask& task, const char* caller);

}  // namespace braid
