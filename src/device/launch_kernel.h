// Host side of the device layer: launches the collective and point-to-point kernels. The only
// entries into device code.
#pragma once

#include <cuda_runtime.h>

#include "device/dev_types.h"

namespace braid {

// What the kernels were compiled for on the current GPU, as cudaFuncGetAttributes reports it: the
// lowest PTX (virtual) architecture and the lowest machine-code architecture over the kernels
// asked, major * 10 + minor. Device code compiled from compute_80 is Ampere code (__CUDA_ARCH__
// 800: no grid dependency control) even where it runs as sm_90 machine code on a Hopper GPU
// (BRAID_CUDA_ARCHS=80-as-90), so the Hopper launch features follow this, not the device alone.
struct KernelArch {
  int ptx = 0;  // 0: nothing asked yet
  int binary = 0;
  void add(int ptxVersion, int binaryVersion) {
    ptx = ptx == 0 ? ptxVersion : (ptxVersion < ptx ? ptxVersion : ptx);
    binary = binary == 0 ? binaryVersion : (binaryVersion < binary ? binaryVersion : binary);
  }
  // Every kernel asked was compiled for compute capability 9.0 or later: thread-block clusters and
  // programmatic dependent launch (LaunchOptions) may be used where the device has them.
  bool hopper() const { return ptx >= 90 && binary >= 90; }
};

// How every kernel is launched (compute capability 9.0 and later, for kernels compiled for it:
// KernelArch::hopper; all off otherwise).
// pdl: with programmatic stream serialization, so that the kernel is scheduled while the previous
// kernel of the stream ends; it waits for that kernel's completion (cudaGridDependencySynchronize)
// before it reads any memory.
// clusterSize (ncclConfig_t.cgaClusterSize, 0-8): CTAs are launched in thread-block clusters of
// this many (the largest size up to it that divides the grid), scheduled spread over the GPU, as
// NCCL does. A cluster's CTAs share a GPC. On 4 H200, Broadcast of 1 GiB on 32 channels moved
// 335 GB/s without clusters and 363 with clusters of 4 (NCCL 2.28.9: 309 without, 360 with).
// completionEvent (ncclCollConfig_t::launchCompletionEvent; null: none): recorded once every CTA of
// the kernel has begun (cudaLaunchAttributeLaunchCompletionEvent, CUDA 12.3 and later drivers).
struct LaunchOptions {
  bool pdl = false;
  int clusterSize = 0;
  cudaEvent_t completionEvent = nullptr;
};

// The cluster size of a grid of `blocks` CTAs: the largest one up to `wanted` that divides it (the
// grid must be whole clusters); 1 means no cluster.
constexpr int clusterSizeFor(int blocks, int wanted) {
  for (int size = wanted; size > 1; --size) {
    if (blocks % size == 0) return size;
  }
  return 1;
}

// Launches args.work on `stream`: args.work.nChannels CTAs of nThreads threads each (a multiple of
// 32, at most kMaxThreads; protocols may use fewer). Asynchronous; returns the launch error, if any.
// peers (optional): every rank's registered buffer of the operation (DevRegPeers), for a
// zero-copy ring; Simple Ring only (cudaErrorInvalidValue otherwise).
[[nodiscard]] cudaError_t launchCollectiveKernel(const DevKernelArgs& args, int nThreads, const LaunchOptions& launch,
                                                 cudaStream_t stream, const DevRegPeers* peers = nullptr);

// Launches a point-to-point kernel: args.nCtas CTAs of nThreads Simple workers (a multiple of 32,
// at most kMaxSimpleP2pWorkers) plus one poster warp each; `balanced` must be true when a segment
// is balanced (DevP2pSeg::balancedPages), and is best false otherwise. Same launch and error rules
// as above.
[[nodiscard]] cudaError_t launchP2pKernel(const DevP2pArgsSmall& args, int nThreads, bool balanced,
                                          const LaunchOptions& launch, cudaStream_t stream);
[[nodiscard]] cudaError_t launchP2pKernel(const DevP2pArgsMedium& args, int nThreads, bool balanced,
                                          const LaunchOptions& launch, cudaStream_t stream);
[[nodiscard]] cudaError_t launchP2pKernel(const DevP2pArgsLarge& args, int nThreads, bool balanced,
                                          const LaunchOptions& launch, cudaStream_t stream);

// One rank with a PreMulSum op (work.redOp): recv[i] = send[i] * scalar for work.count elements
// (in place too). Same launch and error rules as above; cudaErrorInvalidValue for another op.
[[nodiscard]] cudaError_t launchOneRankKernel(const DevWork& work, const LaunchOptions& launch, cudaStream_t stream);

// Loads every kernel above onto the current GPU. CUDA loads a kernel lazily, at its first launch
// (CUDA_MODULE_LOADING=LAZY, the default since 12.2), and loading may wait until the GPU is idle.
// A first launch of, say, the LL128 kernel while another communicator's kernel on this GPU waits
// for its peer then never returns if that peer's thread is itself stuck in a CUDA call behind it
// (2 H200, 8 threads driving 4 communicators: 15 hangs in 42 runs; each of the 8 whose stacks were
// taken had a thread inside cudaLaunchKernelEx). Call it before the first launch on the GPU, when no
// kernel of ours runs there. *arch: what every kernel was compiled for there.
[[nodiscard]] cudaError_t loadKernels(KernelArch* arch);
// What the kernels were compiled for on the current GPU, from the Simple kernel alone (which this
// loads): every device translation unit is compiled with the same architecture flags. For when
// loadKernels is not called (BRAID_LOAD_KERNELS=0).
[[nodiscard]] cudaError_t queryKernelArch(KernelArch* arch);

constexpr int kMaxThreads = 640;
constexpr int kMaxLLThreads = 512;  // LL CTAs (the planner's maximum): 128 registers a thread, no spills
constexpr int kMaxSimpleP2pWorkers = 512;

}  // namespace braid
