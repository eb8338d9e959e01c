// The bridge between a communicator and its window manager (window/manager.h): the manager sees
// a narrow view of the communicator (window/window_context.h), built here.
#pragma once

#include <nccl.h>

#include "core/comm.h"
#include "window/manager.h"

namespace braid {

// The communicator's window manager; with `create`, made on first use (the current device may be
// any: the manager sets its own). Null without `create` when none exists yet.
[[nodiscard]] ncclResult_t commWindows(ncclComm* comm, bool create, window::Manager** out);

}  // namespace braid
