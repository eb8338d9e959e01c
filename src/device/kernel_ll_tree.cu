// The LL-protocol kernel of DevAlgo::kTree: AllReduce up and down the channels' trees
// (coll/tree_colls.h).
#include "device/coll/tree_colls.h"
#include "device/kernel_ll.h"
#include "device/launch_kernel.h"

namespace braid {

__global__ void __launch_bounds__(kMaxThreads, 1) llTreeKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  llKernelStart(args, &shared);
  runTreeWork<LLPicker>(args, &shared, kProtoLL, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
}

cudaError_t launchLLTreeKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                               cudaStream_t stream) {
  return launchWithConfig(llTreeKernel, args.work.nChannels, nThreads, launch, stream, args);
}

}  // namespace braid
