// Every live window of the process by handle: NCCL's pointer lookups (ncclGetLsaDevicePointer and
// friends) take a window and no communicator, and may come from any thread.
#pragma once

#include <nccl.h>

#include <memory>

#include "window/window.h"

namespace braid::window {

void registryAdd(const std::shared_ptr<const WindowInfo>& info);
void registryRemove(ncclWindow_t handle);
// The window's information, or null for a handle that is not a live window.
std::shared_ptr<const WindowInfo> registryFind(ncclWindow_t handle);

}  // namespace braid::window
