// Host side of the device layer: launches the collective kernel. The only entry into device code.
#pragma once

#include <cuda_runtime.h>

#include "device/dev_types.h"

namespace braid {

// Launches args.work on `stream`: args.work.nChannels CTAs of nThreads threads each (a multiple of
// 32, at most kMaxThreads; protocols may use fewer). Asynchronous; returns the launch error, if any.
[[nodiscard]] cudaError_t launchCollectiveKernel(const DevKernelArgs& args, int nThreads, cudaStream_t stream);

constexpr int kMaxThreads = 640;

}  // namespace braid
