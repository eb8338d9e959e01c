// The one-rank PreMulSum kernel (launch_kernel.h): a grid-stride loop applying the op's
// premultiplication element by element. Only PreMulSum instantiates it: with one rank every other
// reduction is a copy, which the host makes with cudaMemcpyAsync.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "device/kernels.h"
#include "device/launch_kernel.h"
#include "device/reduce/reduce_dispatch.h"
#include "device/reduce/work_scalar_device.h"

namespace braid {
namespace {

constexpr int kOneRankThreads = 256;
constexpr int64_t kOneRankMaxBlocks = 1024;

template <typename T, typename Fn>
__global__ void oneRankKernel(const DevWork work) {
  waitForPreviousKernel();
  const Fn fn(workScalar(work));
  const T* src = static_cast<const T*>(work.sendbuff);
  T* dst = static_cast<T*>(work.recvbuff);
  const int64_t n = static_cast<int64_t>(work.count);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = fn.preOp(src[i]);
  }
}

struct OneRankLauncher {
  const DevWork& work;
  const LaunchOptions& launch;
  cudaStream_t stream;
  cudaError_t result = cudaErrorInvalidValue;

  template <typename T, typename Fn>
  void run() {
    if constexpr (std::is_same<Fn, FuncPreMulSum<T>>::value) {
      const int64_t blocks = std::clamp<int64_t>(
          (static_cast<int64_t>(work.count) + kOneRankThreads - 1) / kOneRankThreads, 1, kOneRankMaxBlocks);
      result = launchWithConfig(oneRankKernel<T, Fn>, static_cast<int>(blocks), kOneRankThreads, launch, stream, work);
    }
  }
};

// Loads the kernel of each type visitTypeOpHost instantiates for PreMulSum.
struct OneRankLoader {
  KernelArch* arch;
  cudaError_t result = cudaSuccess;

  template <typename T, typename Fn>
  void run() {
    if constexpr (std::is_same<Fn, FuncPreMulSum<T>>::value) result = loadKernel(oneRankKernel<T, Fn>, arch);
  }
};

}  // namespace

cudaError_t loadOneRankKernels(KernelArch* arch) {
  for (int dtype = 0; dtype < kDevNumTypes; dtype++) {
    OneRankLoader loader{arch, cudaSuccess};
    if (!visitTypeOpHost(dtype, static_cast<int>(DevRedOp::kPreMulSum), loader)) continue;
    if (loader.result != cudaSuccess) return loader.result;
  }
  return cudaSuccess;
}

cudaError_t launchOneRankKernel(const DevWork& work, const LaunchOptions& launch, cudaStream_t stream) {
  OneRankLauncher launcher{work, launch, stream};
  if (!visitTypeOpHost(work.dtype, work.redOp, launcher)) return cudaErrorInvalidValue;
  return launcher.result;
}

}  // namespace braid
