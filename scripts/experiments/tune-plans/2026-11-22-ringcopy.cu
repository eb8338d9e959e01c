// Standalone experiment of 2026-11-22 (results: docs/performance-log.md, 2026-11-22). Build and run on a
// 4-GPU machine: nvcc -O3 -arch=sm_90 -o ringcopy 2026-11-22-ringcopy.cu && ./ringcopy
// Experiment: ring-shift SM copy ceiling on 4 GPUs (GPU i stores into GPU i+1), variants of the loop.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ uint4 ldG(const void* p) { uint4 v; asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ uint4 ldNC(const void* p) { uint4 v; asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v; }
template <int MODE> __device__ __forceinline__ void stG(void* p, uint4 v) {
  if (MODE == 0) asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  else if (MODE == 1) asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
  else if (MODE == 2) asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  else asm volatile("st.global.cg.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// Each CTA owns contiguous steps of stepBytes, round robin over CTAs (like channels over chunks).
// Inside a step: warp-contiguous packs, U in flight, then bar.sync (the step bubble) if SYNC.
template <int U, int ST, bool SYNC, bool NC>
__global__ void stepCopy(uint4* dst, const uint4* src, int64_t nPacks, int64_t stepPacks) {
  const int tid = threadIdx.x, nthreads = blockDim.x, lane = tid % 32;
  for (int64_t stepBase = blockIdx.x * stepPacks; stepBase < nPacks; stepBase += gridDim.x * stepPacks) {
    const int64_t n = min(stepPacks, nPacks - stepBase);
    const uint4* s = src + stepBase; uint4* d = dst + stepBase;
    const int64_t warpPacks = 32 * U;
    for (int64_t base = (tid / 32) * warpPacks + lane; base + (U - 1) * 32 < n; base += (nthreads / 32) * warpPacks) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = NC ? ldNC(s + base + u * 32) : ldG(s + base + u * 32);
#pragma unroll
      for (int u = 0; u < U; u++) stG<ST>(d + base + u * 32, v[u]);
    }
    if (SYNC) __syncthreads();
  }
}

typedef void (*Kern)(uint4*, const uint4*, int64_t, int64_t);
struct Variant { const char* name; Kern k; int ctas; int threads; int64_t stepBytes; };

int main() {
  int n = 0; CK(cudaGetDeviceCount(&n)); if (n > 4) n = 4;
  const size_t bytes = 1ull << 30;
  std::vector<uint4*> src(n), dst(n); std::vector<cudaStream_t> st(n); std::vector<cudaEvent_t> e0(n), e1(n);
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < n; p++) if (p != g) CK(cudaDeviceEnablePeerAccess(p, 0));
    CK(cudaMalloc(&src[g], bytes)); CK(cudaMalloc(&dst[g], bytes)); CK(cudaMemset(src[g], g + 1, bytes));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking)); CK(cudaEventCreate(&e0[g])); CK(cudaEventCreate(&e1[g]));
  }
  std::vector<Variant> vs = {
    {"u8 st.mem sync 16x512 512K", stepCopy<8, 0, true, false>, 16, 512, 512 << 10},
    {"u8 st.mem sync 32x512 512K", stepCopy<8, 0, true, false>, 32, 512, 512 << 10},
    {"u8 st.mem sync 64x512 512K", stepCopy<8, 0, true, false>, 64, 512, 512 << 10},
    {"u8 st.mem sync 132x512 512K", stepCopy<8, 0, true, false>, 132, 512, 512 << 10},
    {"u8 st.mem nosync 16x512 512K", stepCopy<8, 0, false, false>, 16, 512, 512 << 10},
    {"u8 st.mem nosync 16x512 64M", stepCopy<8, 0, false, false>, 16, 512, 64 << 20},
    {"u8 st.noclob sync 16x512 512K", stepCopy<8, 1, true, false>, 16, 512, 512 << 10},
    {"u8 st.volatile sync 16x512", stepCopy<8, 2, true, false>, 16, 512, 512 << 10},
    {"u8 st.cg sync 16x512", stepCopy<8, 3, true, false>, 16, 512, 512 << 10},
    {"u8 ldnc sync 16x512", stepCopy<8, 0, true, true>, 16, 512, 512 << 10},
    {"u4 sync 16x512", stepCopy<4, 0, true, false>, 16, 512, 512 << 10},
    {"u16 sync 16x512", stepCopy<16, 0, true, false>, 16, 512, 512 << 10},
    {"u8 sync 16x1024", stepCopy<8, 0, true, false>, 16, 1024, 512 << 10},
    {"u8 sync 16x256", stepCopy<8, 0, true, false>, 16, 256, 512 << 10},
    {"u8 sync 32x256", stepCopy<8, 0, true, false>, 32, 256, 512 << 10},
    {"u8 sync 16x512 128K", stepCopy<8, 0, true, false>, 16, 512, 128 << 10},
    {"u8 sync 16x512 2M", stepCopy<8, 0, true, false>, 16, 512, 2 << 20},
  };
  const int64_t nPacks = bytes / 16;
  for (int mode = 0; mode < 2; mode++) {  // 0: ring shift (all GPUs), 1: GPU0 -> GPU1 alone
    printf("== %s, 1 GiB per GPU, GB/s (median of 7) ==\n", mode == 0 ? "ring shift, all GPUs" : "one pair 0->1");
    for (auto& v : vs) {
      std::vector<double> r;
      for (int it = 0; it < 8; it++) {
        for (int g = 0; g < (mode == 0 ? n : 1); g++) {
          CK(cudaSetDevice(g)); CK(cudaEventRecord(e0[g], st[g]));
          v.k<<<v.ctas, v.threads, 0, st[g]>>>(dst[(g + 1) % n], src[g], nPacks, v.stepBytes / 16);
          CK(cudaEventRecord(e1[g], st[g]));
        }
        float worst = 0;
        for (int g = 0; g < (mode == 0 ? n : 1); g++) { CK(cudaSetDevice(g)); CK(cudaEventSynchronize(e1[g])); float ms; CK(cudaEventElapsedTime(&ms, e0[g], e1[g])); worst = std::max(worst, ms); }
        if (it > 0) r.push_back(bytes / (worst * 1e-3) / 1e9);
      }
      std::sort(r.begin(), r.end());
      printf("%-34s %7.1f\n", v.name, r[r.size() / 2]);
    }
    // copy engine
    std::vector<double> r;
    for (int it = 0; it < 8; it++) {
      for (int g = 0; g < (mode == 0 ? n : 1); g++) { CK(cudaSetDevice(g)); CK(cudaEventRecord(e0[g], st[g])); CK(cudaMemcpyAsync(dst[(g + 1) % n], src[g], bytes, cudaMemcpyDefault, st[g])); CK(cudaEventRecord(e1[g], st[g])); }
      float worst = 0;
      for (int g = 0; g < (mode == 0 ? n : 1); g++) { CK(cudaSetDevice(g)); CK(cudaEventSynchronize(e1[g])); float ms; CK(cudaEventElapsedTime(&ms, e0[g], e1[g])); worst = std::max(worst, ms); }
      if (it > 0) r.push_back(bytes / (worst * 1e-3) / 1e9);
    }
    std::sort(r.begin(), r.end());
    printf("%-34s %7.1f\n", "copy engine", r[r.size() / 2]);
  }
  return 0;
}
