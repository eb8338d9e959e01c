// A minimal NCCL program: one process drives every local GPU (ncclCommInitAll), sums a float buffer
// across them with ncclAllReduce and checks the result. Built against an installed Braid by
// examples/CMakeLists.txt (find_package(NCCL)); without a GPU it says so and exits 0.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_OK(call)                                                                           \
  do {                                                                                          \
    cudaError_t e = (call);                                                                     \
    if (e != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define NCCL_OK(call)                                                                           \
  do {                                                                                          \
    ncclResult_t r = (call);                                                                    \
    if (r != ncclSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

int main() {
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  std::printf("NCCL library version %d (header %d)\n", version, NCCL_VERSION_CODE);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("no CUDA GPU: nothing to reduce\n");
    return 0;
  }
  const size_t count = 1 << 20;
  std::vector<ncclComm_t> comms(ndev);
  std::vector<int> devs(ndev);
  for (int d = 0; d < ndev; ++d) devs[d] = d;
  NCCL_OK(ncclCommInitAll(comms.data(), ndev, devs.data()));

  std::vector<float*> send(ndev), recv(ndev);
  std::vector<cudaStream_t> streams(ndev);
  std::vector<float> host(count);
  for (int d = 0; d < ndev; ++d) {
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaMalloc(&send[d], count * sizeof(float)));
    CUDA_OK(cudaMalloc(&recv[d], count * sizeof(float)));
    CUDA_OK(cudaStreamCreate(&streams[d]));
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>((i + 3 * d) % 17);  // exact sums
    CUDA_OK(cudaMemcpy(send[d], host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
  NCCL_OK(ncclGroupStart());
  for (int d = 0; d < ndev; ++d) {
    NCCL_OK(ncclAllReduce(send[d], recv[d], count, ncclFloat32, ncclSum, comms[d], streams[d]));
  }
  NCCL_OK(ncclGroupEnd());

  size_t wrong = 0;
  for (int d = 0; d < ndev; ++d) {
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaStreamSynchronize(streams[d]));
    CUDA_OK(cudaMemcpy(host.data(), recv[d], count * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < ndev; ++r) expected += static_cast<float>((i + 3 * r) % 17);
      wrong += host[i] != expected;
    }
  }
  for (int d = 0; d < ndev; ++d) {
    NCCL_OK(ncclCommDestroy(comms[d]));
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaFree(send[d]));
    CUDA_OK(cudaFree(recv[d]));
    CUDA_OK(cudaStreamDestroy(streams[d]));
  }
  std::printf("AllReduce on %d GPU%s: %zu wrong elements\n", ndev, ndev == 1 ? "" : "s", wrong);
  return wrong == 0 ? 0 : 1;
}
