// The Simple-protocol kernel of DevAlgo::kDirect: every rank pushes straight into every peer's
// FIFO, one CTA per direct channel (coll/direct_simple_colls.h). No poster warp: each chunk's
// handshake is one post per peer, made by the workers themselves.
#include "device/coll/direct_simple_colls.h"
#include "device/kernels.h"
#include "device/launch_kernel.h"

namespace braid {

__global__ void __launch_bounds__(kMaxSimpleWorkers, 1) simpleDirectKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  collectiveKernelStart(args, &shared);
  runDirectSimpleWork(args, &shared);
}

cudaError_t loadSimpleDirectKernel(KernelArch* arch) { return loadKernel(simpleDirectKernel, arch); }

cudaError_t launchSimpleDirectKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                     cudaStream_t stream) {
  if (nThreads > kMaxSimpleWorkers) return cudaErrorInvalidValue;
  return launchWithConfig(simpleDirectKernel, args.work.nChannels, nThreads, launch, stream, args);
}

}  // namespace braid
