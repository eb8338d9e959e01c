// The LL-protocol kernel of DevAlgo::kDirect: every rank straight to every peer, one CTA per direct
// channel (coll/direct_colls.h).
#include "device/coll/direct_colls.h"
#include "device/kernel_ll.h"
#include "device/launch_kernel.h"

namespace braid {

__global__ void __launch_bounds__(kMaxThreads, 1) llDirectKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  collectiveKernelStart(args, &shared);
  runDirectWork(args, &shared);
}

cudaError_t loadLLDirectKernel(KernelArch* arch) { return loadKernel(llDirectKernel, arch); }

cudaError_t launchLLDirectKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                 cudaStream_t stream) {
  return launchWithConfig(llDirectKernel, args.work.nChannels, nThreads, launch, stream, args);
}

}  // namespace braid
