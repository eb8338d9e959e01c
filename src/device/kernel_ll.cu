// The LL-protocol kernel: one CTA per channel, every thread runs the algorithm (prims/prims_ll.h),
// around the rings, for DevAlgo::kDirect straight to every peer (coll/direct_colls.h), for
// DevAlgo::kTree up and down the trees (coll/tree_colls.h).
#include "device/coll/direct_colls.h"
#include "device/coll/run_work.h"
#include "device/coll/tree_colls.h"
#include "device/kernels.h"
#include "device/launch_kernel.h"
#include "device/prims/prims_ll.h"

namespace braid {

// The step function of this protocol for the (T, Fn) that visitTypeOp picks.
struct LLPicker {
  StepChoice choice;
  template <typename T, typename Fn>
  __device__ void run() {
    choice.set<T, Fn>(&llStep<T, Fn>);
  }
  static __device__ int64_t chunkBytes(const DevComm& comm, uint32_t requested) {
    return llChunkBytes(comm, requested);
  }
};

__global__ void __launch_bounds__(kMaxThreads, 1) llKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  waitForPreviousKernel();
  noteOpStarted(args, &shared);
  if (threadIdx.x == 0) shared.aborted = 0;
  __syncthreads();
  if (args.work.algo == static_cast<uint8_t>(DevAlgo::kDirect)) {
    runDirectWork(args, &shared);
  } else if (args.work.algo == static_cast<uint8_t>(DevAlgo::kTree)) {
    runTreeWork<LLPicker>(args, &shared, kProtoLL, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
  } else {
    ProtoState state = makeProtoState(args.comm, &shared, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                                      kProtoLL, workScalar(args.work));
    runWork<LLPicker>(args, state);
  }
}

cudaError_t launchLLKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch, cudaStream_t stream) {
  return launchWithConfig(llKernel, args.work.nChannels, nThreads, launch, stream, args);
}

}  // namespace braid
