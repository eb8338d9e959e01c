// Waking a communicator's proxy when a CUDA graph replays its launches. An eager launch kicks the
// proxy from the host (CommDataPath::launchPending); a replay makes no host call, so a captured
// launch on a communicator with network connections gets a host node in its graph that kicks the
// proxy when the replay reaches the launch. Without it a sleeping proxy would notice the replay's
// first steps only at its next poll, up to 1 ms later.
//
// The node is a leaf beside the launch (the same dependencies, nothing depends on it), so the kernel
// does not wait for the host callback. It holds the proxy through a ProxyKicker kept alive by a CUDA
// user object of the graph: a replay after the communicator is destroyed kicks nothing.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>

#include "proxy/proxy.h"

namespace braid {

// When `stream` is being captured, adds the wake node for the launch about to be captured on it;
// otherwise does nothing.
[[nodiscard]] ncclResult_t addReplayWake(cudaStream_t stream, const std::shared_ptr<proxy::ProxyKicker>& kicker);

}  // namespace braid
