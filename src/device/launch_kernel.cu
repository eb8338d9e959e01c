// launchCollectiveKernel: the host's only entry into device code. Picks the protocol's kernel.
// loadKernels: makes every kernel resident; queryKernelArch: what they were compiled for.
#include "device/kernels.h"
#include "device/launch_kernel.h"
#include "device/signal_add.h"

namespace braid {

cudaError_t loadKernels(KernelArch* arch) {
  return loadAll({loadSimpleKernel, loadLLKernel, loadLLDirectKernel, loadSimpleDirectKernel, loadLL128Kernel,
                  loadP2pKernels, loadOneRankKernels, loadSignalAddKernel},
                 arch);
}

cudaError_t queryKernelArch(KernelArch* arch) { return loadSimpleKernel(arch); }

cudaError_t launchCollectiveKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                   cudaStream_t stream, const DevRegPeers* peers) {
  if (args.work.nChannels <= 0 || args.work.nChannels > kMaxChannels || nThreads < 32 || nThreads % 32 != 0 ||
      nThreads > kMaxThreads) {
    return cudaErrorInvalidValue;
  }
  const bool direct = args.work.algo == static_cast<uint8_t>(DevAlgo::kDirect);
  if (direct && (args.work.proto == kProtoLL128 || args.work.nChannels > kMaxDirectChannels)) {
    return cudaErrorInvalidValue;  // direct algorithms exist for LL and Simple, on the direct channels
  }
  if (args.work.algo == static_cast<uint8_t>(DevAlgo::kTree) &&
      (args.work.proto == kProtoLL128 || args.work.coll != static_cast<uint8_t>(CollId::kAllReduce))) {
    return cudaErrorInvalidValue;  // the tree runs AllReduce with LL or Simple
  }
  if (peers != nullptr && (args.work.proto != kProtoSimple || args.work.algo != static_cast<uint8_t>(DevAlgo::kRing))) {
    return cudaErrorInvalidValue;  // direct rings (write- or read-direct) exist for Simple only
  }
  switch (args.work.proto) {
    case kProtoSimple:
      if (direct) return launchSimpleDirectKernel(args, nThreads, launch, stream);
      return launchSimpleKernel(args, peers, nThreads, launch, stream);
    case kProtoLL:
      if (direct) return launchLLDirectKernel(args, nThreads, launch, stream);
      return launchLLKernel(args, nThreads, launch, stream);
    case kProtoLL128:
      return launchLL128Kernel(args, nThreads, launch, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace braid
