// The LL-protocol kernel around the rings: one CTA per channel, every thread runs the algorithm
// (prims/prims_ll.h). The direct and tree algorithms have their own kernels (kernel_ll.h).
#include "device/kernel_ll.h"
#include "device/launch_kernel.h"

namespace braid {

__global__ void __launch_bounds__(kMaxThreads, 1) llRingKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  llKernelStart(args, &shared);
  ProtoState state = makeProtoState(args.comm, &shared, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                                    kProtoLL, workScalar(args.work));
  runWork<LLPicker>(args, state);
}

cudaError_t launchLLRingKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                               cudaStream_t stream) {
  return launchWithConfig(llRingKernel, args.work.nChannels, nThreads, launch, stream, args);
}

}  // namespace braid
