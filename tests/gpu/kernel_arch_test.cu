// What the host believes the kernels were compiled for (KernelArch, from cudaFuncGetAttributes)
// against what the device code of this very build is: a probe kernel, compiled with the same
// architecture flags, stores its __CUDA_ARCH__. The Hopper launch features (programmatic dependent
// launch, clusters) follow KernelArch::hopper, so it must say no wherever the code is pre-Hopper
// code, including compute_80 code running as sm_90 machine code (BRAID_CUDA_ARCHS=80-as-90), where
// the kernels have no grid dependency control.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "device/launch_kernel.h"

namespace braid {
namespace {

__global__ void probeArch(int* out) {
#if defined(__CUDA_ARCH__)
  *out = __CUDA_ARCH__;
#endif
}

// __CUDA_ARCH__ of the code that runs on the current GPU (800 for compute_80), or -1.
int codeArch() {
  int* d = nullptr;
  int arch = -1;
  if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) return -1;
  probeArch<<<1, 1>>>(d);
  if (cudaMemcpy(&arch, d, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) arch = -1;
  (void)cudaFree(d);
  return arch;
}

TEST(KernelArch, TheHostSeesWhatTheKernelsWereCompiledFor) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  KernelArch loaded;
  ASSERT_EQ(loadKernels(&loaded), cudaSuccess);
  KernelArch queried;
  ASSERT_EQ(queryKernelArch(&queried), cudaSuccess);
  const int code = codeArch();
  ASSERT_GT(code, 0);
  int major = 0;
  int minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  std::printf("GPU 0: compute capability %d.%d; device code __CUDA_ARCH__ %d; kernels: compute_%d, sm_%d\n", major,
              minor, code, loaded.ptx, loaded.binary);
  EXPECT_EQ(loaded.ptx, code / 10);
  EXPECT_EQ(queried.ptx, loaded.ptx);
  EXPECT_EQ(queried.binary, loaded.binary);
  EXPECT_LE(loaded.ptx, loaded.binary);
  EXPECT_LE(loaded.binary, major * 10 + minor);
  EXPECT_EQ(loaded.hopper(), code >= 900);
}

TEST(KernelArch, HopperNeedsBothArchitecturesAtNinety) {
  KernelArch a;
  EXPECT_FALSE(a.hopper());  // nothing asked
  a.add(90, 90);
  EXPECT_TRUE(a.hopper());
  a.add(80, 90);  // one compute_80 kernel as sm_90 machine code
  EXPECT_FALSE(a.hopper());
  EXPECT_EQ(a.ptx, 80);
  EXPECT_EQ(a.binary, 90);
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine; kernel_arch_test needs one GPU\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
