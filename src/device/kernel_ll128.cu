// The LL128-protocol kernel: one CTA per channel, every thread runs the algorithm in 8-lane groups
// (prims/prims_ll128.h).
#include "device/coll/run_work.h"
#include "device/kernels.h"
#include "device/launch_kernel.h"
#include "device/prims/prims_ll128.h"

namespace braid {

// The step function of this protocol for the (T, Fn) that visitTypeOp picks.
struct LL128Picker {
  using Steps = LL128Steps;
  StepChoice choice;
  template <typename T, typename Fn>
  __device__ void run() {
    choice.set<T, Fn>(&ll128Step<T, Fn>);
  }
  static __device__ int64_t chunkBytes(const DevComm& comm, uint32_t requested) {
    return ll128ChunkBytes(comm, requested);
  }
};

__global__ void __launch_bounds__(kMaxThreads, 1) ll128Kernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  collectiveKernelStart(args, &shared);
  ProtoState state = makeProtoState(args.comm, &shared, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                                    kProtoLL128, workScalar(args.work), args.work.sharedSteps != 0);
  runWork<LL128Picker>(args, state);
}

using LL128RingKernels = PairRingKernels<LL128Picker, kProtoLL128>;

cudaError_t loadLL128Kernel(KernelArch* arch) { return loadPairKernels<LL128RingKernels>(ll128Kernel, arch); }

cudaError_t launchLL128Kernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                              cudaStream_t stream) {
  const InlinedPair pair = nThreads <= kMaxPairRingThreads ? inlinedPairOf(args.work) : InlinedPair::kNone;
  return launchWithConfig(kernelForPair<LL128RingKernels>(pair, ll128Kernel), args.work.nChannels, nThreads, launch,
                          stream, args);
}

}  // namespace braid
