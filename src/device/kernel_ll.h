// The LL-protocol kernels, one per algorithm in its own translation unit (kernel_ll.cu: around the
// rings; kernel_ll_direct.cu: straight to every peer; kernel_ll_tree.cu: up and down the trees).
// Apart, each kernel gets the registers of its own path (no spills; the combined kernel had a
// 512-byte frame and spilled), and they compile side by side: the combined one was the longest job
// of a build (227 s on a 2-core CI machine), and a 32-core build took 82-85 s with it, 50-53 s
// without.
#pragma once

#include "device/coll/run_work.h"
#include "device/kernels.h"
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

// What every LL kernel does first: after the previous kernel, the hang notes, the abort flag clear.
__device__ __forceinline__ void llKernelStart(const DevKernelArgs& args, PrimsShared* shared) {
  waitForPreviousKernel();
  noteOpStarted(args, shared);
  if (threadIdx.x == 0) shared->aborted = 0;
  __syncthreads();
}

}  // namespace braid
