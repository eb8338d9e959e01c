// Host-side launchers of the three protocol kernels (one translation unit each, so that they
// compile in parallel), and what every kernel shares around its launch: the launch itself with
// programmatic dependent launch, and the wait for the previous kernel that it makes necessary.
// launch_kernel.cu picks a launcher from DevWork::proto.
#pragma once

#include <cuda_runtime.h>

#include <initializer_list>

#include "device/arch/ptx.h"
#include "device/dev_types.h"
#include "device/launch_kernel.h"
#include "device/prims/prims_common.h"
#include "device/reduce/reduce_dispatch.h"

namespace braid {

// Simple runs nThreads workers plus one poster warp (see prims/prims_simple.h). Its workers are
// capped below kMaxThreads so that the kernel may keep 8 packs per source in registers (up to 120
// registers a thread; at 672 threads the cap would be 96 and the unrolled loop would spill).
constexpr int kSimpleExtraThreads = 32;
constexpr int kMaxSimpleWorkers = 512;

// peers: registered receive buffers for a direct ring (null: the FIFO path).
[[nodiscard]] cudaError_t launchSimpleKernel(const DevKernelArgs& args, const DevRegPeers* peers, int nThreads,
                                             const LaunchOptions& launch, cudaStream_t stream);
// LL: rings and trees in one kernel, the direct algorithm in another (kernel_ll.h).
[[nodiscard]] cudaError_t launchLLKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                         cudaStream_t stream);
[[nodiscard]] cudaError_t launchLLDirectKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                               cudaStream_t stream);
// The direct algorithm on Simple (kernel_simple_direct.cu): nThreads workers, no poster warp.
[[nodiscard]] cudaError_t launchSimpleDirectKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                                   cudaStream_t stream);
[[nodiscard]] cudaError_t launchLL128Kernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                            cudaStream_t stream);

// The (type, op) pairs whose LL and LL128 rings have kernels of their own, with the step compiled
// in (coll/run_work.h, runInlinedWork): the copies (AllGather and Broadcast move bytes) and the
// sums of float, half and bfloat16, what training and inference move. A step called through a
// pointer keeps the CTA's state in memory and saves and restores the caller's registers, a cost
// that grows with the CTA: on 2 H200 the LL ring AllReduce of 64 KiB took 6.9 / 8.2 / 11.2 us on
// CTAs of 128 / 256 / 512 threads with called steps, 5.8 / 5.8 / 6.1 with the step inlined
// (tune-plans/2026-11-30-ll-threads.txt, 2026-11-30-ll-inline-step.txt). A kernel per pair keeps
// each one's registers to its own pair; all 57 pairs so would not fit the library's size budget.
enum class InlinedPair { kNone, kCopy, kFloatSum, kHalfSum, kBfloat16Sum };

inline InlinedPair inlinedPairOf(const DevWork& work) {
  if (work.algo == static_cast<uint8_t>(DevAlgo::kTree)) return InlinedPair::kNone;
  const auto coll = static_cast<CollId>(work.coll);
  if (coll == CollId::kAllGather || coll == CollId::kBroadcast) return InlinedPair::kCopy;
  if (work.redOp != static_cast<uint8_t>(DevRedOp::kSum)) return InlinedPair::kNone;
  switch (work.dtype) {
    case kDevFloat32:
      return InlinedPair::kFloatSum;
    case kDevFloat16:
      return InlinedPair::kHalfSum;
    case kDevBfloat16:
      return InlinedPair::kBfloat16Sum;
    default:
      return InlinedPair::kNone;
  }
}

using CollectiveKernel = void (*)(DevKernelArgs);

// A protocol's kernel for `pair`: `generic` for kNone, RingKernels::ring<T, Fn>() for the pair.
template <typename RingKernels>
CollectiveKernel kernelForPair(InlinedPair pair, CollectiveKernel generic) {
  switch (pair) {
    case InlinedPair::kCopy:
      return RingKernels::template ring<uint8_t, FuncSum<uint8_t>>();
    case InlinedPair::kFloatSum:
      return RingKernels::template ring<float, FuncSum<float>>();
    case InlinedPair::kHalfSum:
      return RingKernels::template ring<__half, FuncSum<__half>>();
    case InlinedPair::kBfloat16Sum:
      return RingKernels::template ring<__nv_bfloat16, FuncSum<__nv_bfloat16>>();
    default:
      return generic;
  }
}

// Loaders (loadKernels in launch_kernel.h): each makes its translation unit's kernels resident on
// the current GPU and adds what they were compiled for to *arch.
[[nodiscard]] cudaError_t loadSimpleKernel(KernelArch* arch);
[[nodiscard]] cudaError_t loadLLKernel(KernelArch* arch);
[[nodiscard]] cudaError_t loadLLDirectKernel(KernelArch* arch);
[[nodiscard]] cudaError_t loadLL128Kernel(KernelArch* arch);
[[nodiscard]] cudaError_t loadSimpleDirectKernel(KernelArch* arch);
[[nodiscard]] cudaError_t loadP2pKernels(KernelArch* arch);
[[nodiscard]] cudaError_t loadOneRankKernels(KernelArch* arch);

// Makes one kernel resident on the current GPU (asking for its attributes loads it) and adds its
// architectures to *arch.
template <typename Args>
cudaError_t loadKernel(void (*kernel)(Args), KernelArch* arch) {
  cudaFuncAttributes attributes{};
  const cudaError_t err = cudaFuncGetAttributes(&attributes, kernel);
  if (err == cudaSuccess) arch->add(attributes.ptxVersion, attributes.binaryVersion);
  return err;
}

// Loads a protocol's kernels: the generic one and every pair's (kernelForPair).
template <typename RingKernels>
cudaError_t loadPairKernels(CollectiveKernel generic, KernelArch* arch) {
  for (InlinedPair pair : {InlinedPair::kNone, InlinedPair::kCopy, InlinedPair::kFloatSum, InlinedPair::kHalfSum,
                           InlinedPair::kBfloat16Sum}) {
    const cudaError_t err = loadKernel(kernelForPair<RingKernels>(pair, generic), arch);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

// Runs `loaders` in order up to the first that fails: its error, or cudaSuccess.
inline cudaError_t loadAll(std::initializer_list<cudaError_t (*)(KernelArch*)> loaders, KernelArch* arch) {
  for (cudaError_t (*load)(KernelArch*) : loaders) {
    const cudaError_t err = load(arch);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

// Every kernel's launch: blocks x threads on `stream`, with the attributes `launch` asks for (see
// LaunchOptions in launch_kernel.h).
template <typename Args>
cudaError_t launchWithConfig(void (*kernel)(Args), int blocks, int threads, const LaunchOptions& launch,
                             cudaStream_t stream, const Args& args) {
  cudaLaunchAttribute attrs[4]{};
  unsigned nAttrs = 0;
  if (launch.pdl) {
    attrs[nAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[nAttrs++].val.programmaticStreamSerializationAllowed = 1;
  }
  const int cluster = clusterSizeFor(blocks, launch.clusterSize);
  if (cluster > 1) {
    attrs[nAttrs].id = cudaLaunchAttributeClusterDimension;
    attrs[nAttrs++].val.clusterDim = {static_cast<unsigned>(cluster), 1, 1};
    attrs[nAttrs].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    attrs[nAttrs++].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
  }
  if (launch.completionEvent != nullptr) {
    attrs[nAttrs].id = cudaLaunchAttributeLaunchCompletionEvent;
    attrs[nAttrs].val.launchCompletionEvent.event = launch.completionEvent;
    attrs[nAttrs++].val.launchCompletionEvent.flags = 0;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.stream = stream;
  config.attrs = nAttrs > 0 ? attrs : nullptr;
  config.numAttrs = nAttrs;
  return cudaLaunchKernelEx(&config, kernel, args);
}

// First statement of every kernel: wait until the previous kernel of the stream has completed and
// its memory is visible (a no-op without a programmatic dependency), then let the next one start.
// Code compiled for an architecture before Hopper has neither: its kernels must never be launched
// with programmatic dependencies (the host checks KernelArch::hopper, launch_kernel.h).
__device__ __forceinline__ void waitForPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Hang diagnosis: a collective notes only its long waits (DevWaitNotes), never on its fast path.
// Every CTA tells its wait loops where to note and which op (PrimsShared), before the barrier that
// precedes the work: an eager operation its seq; a captured one the graph op CTA 0 counts here.
__device__ __forceinline__ void noteOpStarted(const DevKernelArgs& args, PrimsShared* shared) {
  if (threadIdx.x != 0) return;
  const DevWork& work = args.work;
  shared->waitNotes = work.waitNotes;
  if (work.waitNotes == nullptr) return;
  shared->waitCapture = work.seq;
  if (work.captured == 0) {
    shared->waitOp = &shared->waitCapture;
    return;
  }
  shared->waitOp = &args.comm->graphOpsBegun;
  if (blockIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&args.comm->graphOpsBegun), 1ull);
}
// What a collective kernel without a poster warp (LL, LL128, the direct ones) does first: after the
// previous kernel, the hang notes, the abort flag clear.
__device__ __forceinline__ void collectiveKernelStart(const DevKernelArgs& args, PrimsShared* shared) {
  waitForPreviousKernel();
  noteOpStarted(args, shared);
  if (threadIdx.x == 0) shared->aborted = 0;
  __syncthreads();
}

// Hang diagnosis of a point-to-point kernel: its waits are noted like an eager collective's, with
// the kernel's own number (watch/p2p_progress.h). Nothing is stored to host memory otherwise.
__device__ __forceinline__ void notePeerOpsStarted(DevWaitNotes* waitNotes, uint64_t seq, PrimsShared* shared) {
  if (threadIdx.x != 0) return;
  shared->waitNotes = waitNotes;
  shared->waitCapture = seq;
  shared->waitOp = &shared->waitCapture;
}

}  // namespace braid
