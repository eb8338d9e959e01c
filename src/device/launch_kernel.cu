// launchCollectiveKernel: the host's only entry into device code. Picks the protocol's kernel.
#include "device/kernels.h"
#include "device/launch_kernel.h"

namespace braid {

cudaError_t launchCollectiveKernel(const DevKernelArgs& args, int nThreads, cudaStream_t stream) {
  if (args.work.nChannels <= 0 || args.work.nChannels > kMaxChannels || nThreads < 32 || nThreads % 32 != 0 ||
      nThreads > kMaxThreads) {
    return cudaErrorInvalidValue;
  }
  switch (args.work.proto) {
    case kProtoSimple:
      return launchSimpleKernel(args, nThreads, stream);
    case kProtoLL:
      return launchLLKernel(args, nThreads, stream);
    case kProtoLL128:
      return launchLL128Kernel(args, nThreads, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace braid
