// Host-side launchers of the three protocol kernels (one translation unit each, so that they
// compile in parallel). launch_kernel.cu picks one from DevWork::proto.
#pragma once

#include <cuda_runtime.h>

#include "device/dev_types.h"

namespace braid {

// Simple runs nThreads workers plus one poster warp (see prims/prims_simple.h). Its workers are
// capped below kMaxThreads so that the kernel may keep 8 packs per source in registers (up to 120
// registers a thread; at 672 threads the cap would be 96 and the unrolled loop would spill).
constexpr int kSimpleExtraThreads = 32;
constexpr int kMaxSimpleWorkers = 512;

[[nodiscard]] cudaError_t launchSimpleKernel(const DevKernelArgs& args, int nThreads, cudaStream_t stream);
[[nodiscard]] cudaError_t launchLLKernel(const DevKernelArgs& args, int nThreads, cudaStream_t stream);
[[nodiscard]] cudaError_t launchLL128Kernel(const DevKernelArgs& args, int nThreads, cudaStream_t stream);

}  // namespace braid
