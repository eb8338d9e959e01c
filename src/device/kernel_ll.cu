// The LL-protocol kernel around the rings and, for DevAlgo::kTree, up and down the channels' trees
// (coll/tree_colls.h): one CTA per channel, every thread runs the algorithm (prims/prims_ll.h).
// Ring and tree share the LL step functions, so one kernel holds both: apart, each carried its own
// copy of every llStep<T, Fn> (1.4 MB of fatbin each). The rings of the common pairs have kernels
// of their own with the step compiled in (pairRingKernel in coll/run_work.h; kernels.h,
// inlinedPairOf), and the direct algorithm has its own kernel (kernel_ll.h says why).
#include "device/coll/tree_colls.h"
#include "device/kernel_ll.h"
#include "device/launch_kernel.h"

namespace braid {

__global__ void __launch_bounds__(kMaxLLThreads, 1) llKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  collectiveKernelStart(args, &shared);
  const int tid = static_cast<int>(threadIdx.x);
  const int nThreads = static_cast<int>(blockDim.x);
  if (args.work.algo == static_cast<uint8_t>(DevAlgo::kTree)) {
    runTreeWork<LLPicker>(args, &shared, kProtoLL, tid, nThreads);
    return;
  }
  ProtoState state =
      makeProtoState(args.comm, &shared, tid, nThreads, kProtoLL, workScalar(args.work), args.work.sharedSteps != 0);
  runWork<LLPicker>(args, state);
}

using LLRingKernels = PairRingKernels<LLPicker, kProtoLL>;
static_assert(kMaxLLThreads <= kMaxPairRingThreads, "every LL CTA fits the pair kernels' bound");

cudaError_t loadLLKernel(KernelArch* arch) { return loadPairKernels<LLRingKernels>(llKernel, arch); }

cudaError_t launchLLKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch, cudaStream_t stream) {
  return launchWithConfig(kernelForPair<LLRingKernels>(inlinedPairOf(args.work), llKernel), args.work.nChannels,
                          nThreads, launch, stream, args);
}

}  // namespace braid
