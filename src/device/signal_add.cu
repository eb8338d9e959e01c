#include "device/kernels.h"
#include "device/signal_add.h"

namespace braid {
namespace {

// The fence orders every earlier write of this stream's work (the copy engine's, which completed
// before this kernel started, and any of this thread) before the adds, for every observer.
__global__ void signalAddKernel(const SignalAdds adds) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  __threadfence_system();
  for (int i = 0; i < adds.count; ++i) atomicAdd_system(adds.words[i], adds.deltas[i]);
}

}  // namespace

cudaError_t launchSignalAdds(const SignalAdds& adds, cudaStream_t stream) {
  if (adds.count <= 0 || adds.count > kMaxSignalAdds) return cudaErrorInvalidValue;
  SignalAdds copy = adds;
  void* args[] = {&copy};
  return cudaLaunchKernel(reinterpret_cast<const void*>(signalAddKernel), dim3(1), dim3(32), args, 0, stream);
}

cudaError_t loadSignalAddKernel(KernelArch* arch) { return loadKernel(signalAddKernel, arch); }

}  // namespace braid
