// The LL-protocol kernels: rings and trees in one (kernel_ll.cu: they share the LL step functions,
// which a kernel apiece would each carry in full, 1.4 MB of fatbin per copy), the direct algorithm
// in its own (kernel_ll_direct.cu). Apart, the direct kernel keeps the registers of its path (no
// spills; the kernel of all three had a 512-byte frame and spilled), and the two compile side by
// side: the one of all three was the longest job of a build (227 s on a 2-core CI machine).
#pragma once

#include "device/coll/run_work.h"
#include "device/kernels.h"
#include "device/prims/prims_ll.h"

namespace braid {

// The step function of this protocol for the (T, Fn) that visitTypeOp picks.
struct LLPicker {
  using Steps = LLSteps;
  StepChoice choice;
  template <typename T, typename Fn>
  __device__ void run() {
    choice.set<T, Fn>(&llStep<T, Fn>);
  }
  static __device__ int64_t chunkBytes(const DevComm& comm, uint32_t requested) {
    return llChunkBytes(comm, requested);
  }
};

}  // namespace braid
