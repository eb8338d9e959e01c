// The Simple-protocol kernel: one CTA per channel, nThreads workers that run the algorithm and one
// poster warp that publishes tail/head (prims/prims_simple.h explains the split and its ordering).
#include "device/coll/run_work.h"
#include "device/coll/tree_colls.h"
#include "device/kernels.h"
#include "device/launch_kernel.h"
#include "device/prims/prims_simple.h"

namespace braid {

// The step function of this protocol for the (T, Fn) that visitTypeOp picks.
struct SimplePicker {
  StepChoice choice;
  template <typename T, typename Fn>
  __device__ void run() {
    choice.set<T, Fn>(&simpleStep<T, Fn>);
  }
  static __device__ int64_t chunkBytes(const DevComm& comm, uint32_t requested) {
    return simpleChunkBytes(comm, requested);
  }
};

__global__ void __launch_bounds__(kMaxSimpleWorkers + kSimpleExtraThreads, 1)
    simpleKernel(const DevSimpleArgs simpleArgs) {
  __shared__ PrimsShared shared;
  waitForPreviousKernel();
  const DevKernelArgs& args = simpleArgs.core;
  noteOpStarted(args, &shared);
  const int nWorkers = static_cast<int>(blockDim.x) - kSimpleExtraThreads;
  const int tid = static_cast<int>(threadIdx.x);
  if (args.work.algo == static_cast<uint8_t>(DevAlgo::kTree)) {
    // The tree's workers publish their own steps (ProtoState::postInline): the poster has none.
    if (!simpleCtaStart(args.comm->abortFlag, nullptr, nullptr, &shared, nWorkers, false)) return;
    runTreeWork<SimplePicker>(args, &shared, kProtoSimple, tid, nWorkers);
  } else {
    DevChannel* channel = &args.comm->channels[blockIdx.x];
    const bool sharedSteps = args.work.sharedSteps != 0;
    if (!simpleCtaStart(args.comm->abortFlag, &channel->send, &channel->recv, &shared, nWorkers, sharedSteps)) return;
    ProtoState state =
        makeProtoState(args.comm, &shared, tid, nWorkers, kProtoSimple, workScalar(args.work), sharedSteps);
    runWork<SimplePicker>(args, state, simpleArgs.direct != 0 ? &simpleArgs.peers : nullptr);
  }
  // After the steps were written back (same thread): lets the poster post the last step and exit.
  if (tid == 0) stReleaseCta(&shared.finished, 1);
}

cudaError_t loadSimpleKernel(KernelArch* arch) { return loadKernel(simpleKernel, arch); }

cudaError_t launchSimpleKernel(const DevKernelArgs& args, const DevRegPeers* peers, int nThreads,
                               const LaunchOptions& launch, cudaStream_t stream) {
  if (nThreads > kMaxSimpleWorkers) return cudaErrorInvalidValue;
  DevSimpleArgs simpleArgs{};
  simpleArgs.core = args;
  if (peers != nullptr) {
    simpleArgs.peers = *peers;
    simpleArgs.direct = 1;
  }
  return launchWithConfig(simpleKernel, args.work.nChannels, nThreads + kSimpleExtraThreads, launch, stream,
                          simpleArgs);
}

}  // namespace braid
