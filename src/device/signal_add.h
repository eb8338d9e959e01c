// One-sided signals inside CUDA graphs (window/ce_backend.h): a one-thread kernel that adds to
// 64-bit signal words with system-scope atomics, after a system-scope fence, so that whatever the
// stream wrote before it (a copy into a peer's window) is visible before the count that announces
// it. Plain host code may include this header; the kernel lives in signal_add.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace braid {

struct KernelArch;

constexpr int kMaxSignalAdds = 32;

// Up to kMaxSignalAdds words (any this GPU can address: its own memory, or a peer's mapped here,
// over a link with native atomics) and what to add to each (two's complement: a subtraction too).
struct SignalAdds {
  unsigned long long* words[kMaxSignalAdds];
  unsigned long long deltas[kMaxSignalAdds];
  int count;

  // Appends one word (the caller keeps count below kMaxSignalAdds).
  void add(unsigned long long* word, unsigned long long delta) {
    words[count] = word;
    deltas[count] = delta;
    ++count;
  }
};

// Enqueues the adds on `stream` (capturable). cudaErrorInvalidValue for a count out of range.
[[nodiscard]] cudaError_t launchSignalAdds(const SignalAdds& adds, cudaStream_t stream);
// Makes the kernel resident on the current GPU (see loadKernels in launch_kernel.h); adds what it
// was compiled for to *arch.
[[nodiscard]] cudaError_t loadSignalAddKernel(KernelArch* arch);

}  // namespace braid
