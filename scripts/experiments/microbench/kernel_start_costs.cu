// What costs at a kernel's start, before the first data moves (docs/performance-log.md, 2026-11-22):
// a non-inlined call with scalar arguments, an indirect call, a struct passed by reference (so
// built in local memory), and the same struct indexed by a run-time index with no call at all.
// One CTA of 256 threads per launch, 4000 launches each, %globaltimer around the code by thread 0.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/kernel_start_costs scripts/experiments/microbench/kernel_start_costs.cu
//   /tmp/kernel_start_costs
//
// 2 H200 (NV18), CUDA 13.0: scalars 0.009 us, indirect 0.173, struct by reference 0.782,
// 8 bytes by reference 0.079, struct with a run-time index and no call 0.906. A local store then a
// load of the same address costs one L2 round trip; keep kernel state in registers and shared memory.
#include <cuda_runtime.h>

#include <cstdio>
__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
struct Chunk {
  long long nelem;
  const char* send[7];
  char* recv[7];
  bool reduceAll;
  const char* own;
  char* dst;
};
__device__ __noinline__ long long scalars(long long a, const char* b, const char* c, int n) {
  return a + reinterpret_cast<long long>(b) * n ^ reinterpret_cast<long long>(c);
}
__device__ __noinline__ long long scalars2(long long a, const char* b, const char* c, int n) {
  return a - reinterpret_cast<long long>(b) * n ^ reinterpret_cast<long long>(c);
}
using Fn = long long (*)(long long, const char*, const char*, int);
__device__ __noinline__ long long byRef(const Chunk& c, int n) {
  long long s = c.nelem;
  for (int k = 0; k < n; k++) s += reinterpret_cast<long long>(c.send[k]);
  return s;
}
__device__ __noinline__ long long smallRef(const long long& x, int n) { return x * n; }
template <int kMode>
__global__ void k(unsigned long long* sum, long long* sink, const char* p, int n) {
  unsigned long long t0 = now();
  long long r = 0;
  if (kMode == 0) r = scalars(n, p, p + n, n);
  if (kMode == 1) {
    Fn f = (n & 1) ? scalars : scalars2;
    r = f(n, p, p + n, n);
  }
  if (kMode == 2) {
    Chunk c{};
    c.nelem = n;
    for (int j = 0; j < n; j++) c.send[j] = p + j;
    r = byRef(c, n);
  }
  if (kMode == 3) {
    long long x = n + threadIdx.x;
    r = smallRef(x, n);
  }
  if (kMode == 4) {
    Chunk c{};
    c.nelem = n;
    for (int j = 0; j < n; j++) c.send[j] = p + j;
    volatile long long acc = c.nelem;
    for (int j = 0; j < n; j++) acc = acc + reinterpret_cast<long long>(c.send[(j * 5) % n]);
    r = acc;
  }
  unsigned long long t1 = now();
  if (threadIdx.x == 0) atomicAdd(&sum[kMode], t1 - t0);
  if (r == 42) *sink = r;
}
int main() {
  unsigned long long* sum;
  long long* sink;
  cudaMalloc(&sum, 64);
  cudaMalloc(&sink, 8);
  cudaMemset(sum, 0, 64);
  const int n = 4000;
  for (int i = 0; i < n; i++) {
    k<0><<<1, 256>>>(sum, sink, nullptr, 3 + (i & 1));
    k<1><<<1, 256>>>(sum, sink, nullptr, 3 + (i & 1));
    k<2><<<1, 256>>>(sum, sink, nullptr, 3 + (i & 1));
    k<3><<<1, 256>>>(sum, sink, nullptr, 3 + (i & 1));
    k<4><<<1, 256>>>(sum, sink, nullptr, 3 + (i & 1));
  }
  cudaDeviceSynchronize();
  unsigned long long h[8];
  cudaMemcpy(h, sum, 64, cudaMemcpyDeviceToHost);
  printf(
      "direct call, scalars %.3f us; indirect call %.3f; struct by reference %.3f; 8-byte by reference %.3f; "
      "struct, dynamic index, no call %.3f\n",
      h[0] / 1e3 / n, h[1] / 1e3 / n, h[2] / 1e3 / n, h[3] / 1e3 / n, h[4] / 1e3 / n);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
