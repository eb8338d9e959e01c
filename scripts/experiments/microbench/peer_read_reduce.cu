// How fast a CTA reduces a peer's buffer into its own (read-direct ReduceScatter on 2 ranks: out =
// local + remote, the remote half read over NVLink), by the way the remote loads are issued, against
// the copy path's sender (local loads, remote stores). Both GPUs run the same kernel at once, each
// reading the other, as in a ReduceScatter. Each CTA owns a contiguous region (a channel) and walks
// it in steps of kStepBytes with a barrier between steps, like the Simple protocol.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/peer_read_reduce scripts/experiments/microbench/peer_read_reduce.cu
//   /tmp/peer_read_reduce            (needs 2 GPUs with peer access)
//
// 2 H200 (NV18, 2026-11-23), GB/s at 8 / 12 / 16 / 24 / 32 CTAs:
//   ld.volatile x8 (what prims_simple.h does)   158 219 281 302 325
//   plain ld x8                                 132 187 244 300 324
//   ld.global.nc.L1::no_allocate x8             184 250 308 305 327
//   ld.volatile x16                             203 265 304 304 325
//   copy-path sender (local ld, remote st) x8   326 321 340 329 347
//   cp.async, 4 stages of 4 packs               97 102 103 101 102  (as written here)
// Stores into a peer saturate from 8 CTAs; loads from it need 24. The non-coherent loads (or twice
// the packs in flight) gain 10% at 16 CTAs here, but a read-direct ReduceScatter of 256 MiB on 16
// channels moved 283.8 GB/s with them and 283.7 without: the Simple kernel is bound elsewhere, and
// the change was not kept.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e));            \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

constexpr int kThreads = 512;
constexpr long kStepBytes = 512 << 10;

__device__ __forceinline__ uint4 ldVolatile(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint4 ldWeak(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 ldNc(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void st(uint4* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ uint4 add(uint4 a, uint4 b) {
  float4 x = *reinterpret_cast<float4*>(&a), y = *reinterpret_cast<float4*>(&b);
  float4 r{x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w};
  return *reinterpret_cast<uint4*>(&r);
}

enum Mode { kReadVolatile, kReadWeak, kReadNc, kReadVolatile16, kStoreRemote, kCpAsync };
const char* kModeName[] = {"read ld.volatile x8", "read ld.weak x8", "read ld.nc x8", "read ld.volatile x16",
                           "copy-path send (remote st) x8", "read cp.async 4 stages x4"};

template <int U, int M>
__device__ void stepPacks(const uint4* remote, const uint4* local, uint4* out, long n) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (long base = warp * 32L * U + lane; base + 32L * (U - 1) < n; base += (kThreads / 32) * 32L * U) {
    uint4 v[U], s[U];
    if constexpr (M == kStoreRemote) {
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = ldWeak(local + base + u * 32);
#pragma unroll
      for (int u = 0; u < U; u++) st(out + base + u * 32, v[u]);  // out is the peer's buffer here
    } else {
#pragma unroll
    for (int u = 0; u < U; u++) {
      v[u] = M == kReadVolatile || M == kReadVolatile16 ? ldVolatile(remote + base + u * 32)
             : M == kReadWeak                          ? ldWeak(remote + base + u * 32)
                                                       : ldNc(remote + base + u * 32);
    }
#pragma unroll
    for (int u = 0; u < U; u++) s[u] = ldWeak(local + base + u * 32);
#pragma unroll
    for (int u = 0; u < U; u++) st(out + base + u * 32, add(v[u], s[u]));
    }
  }
}

// cp.async: remote packs land in shared memory, kStages iterations ahead, without holding registers.
constexpr int kStages = 4, kCpU = 4;
__device__ __forceinline__ void cpAsync16(void* smem, const void* g) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
}
__device__ void stepCpAsync(const uint4* remote, const uint4* local, uint4* out, long n, uint4* smem) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long stride = (kThreads / 32) * 32L * kCpU;
  const long first = warp * 32L * kCpU + lane;
  const long iters = n / stride;  // n is a multiple of stride here
  uint4* mine = smem + threadIdx.x * kStages * kCpU;
  for (long i = 0; i < kStages - 1; i++) {
    if (i < iters) {
      for (int u = 0; u < kCpU; u++) cpAsync16(&mine[(i % kStages) * kCpU + u], remote + first + i * stride + u * 32);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (long i = 0; i < iters; i++) {
    const long ahead = i + kStages - 1;
    if (ahead < iters) {
      for (int u = 0; u < kCpU; u++) {
        cpAsync16(&mine[(ahead % kStages) * kCpU + u], remote + first + ahead * stride + u * 32);
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1) : "memory");
    uint4 s[kCpU];
#pragma unroll
    for (int u = 0; u < kCpU; u++) s[u] = ldWeak(local + first + i * stride + u * 32);
#pragma unroll
    for (int u = 0; u < kCpU; u++) st(out + first + i * stride + u * 32, add(mine[(i % kStages) * kCpU + u], s[u]));
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

template <int M>
__global__ void __launch_bounds__(kThreads) reduceKernel(const uint4* remote, const uint4* local, uint4* out, long nPacks) {
  extern __shared__ uint4 smem[];
  const long per = nPacks / gridDim.x;
  const long begin = per * blockIdx.x;
  const long stepPacksN = kStepBytes / 16;
  for (long off = 0; off < per; off += stepPacksN) {
    const long n = stepPacksN < per - off ? stepPacksN : per - off;
    const long at = begin + off;
    if (M == kCpAsync) {
      stepCpAsync(remote + at, local + at, out + at, n, smem);
    } else if (M == kReadVolatile16) {
      stepPacks<16, M>(remote + at, local + at, out + at, n);
    } else {
      stepPacks<8, M>(remote + at, local + at, out + at, n);
    }
    __syncthreads();
  }
}

using KernelFn = void (*)(const uint4*, const uint4*, uint4*, long);
KernelFn kernelOf(int m) {
  switch (m) {
    case kReadVolatile: return reduceKernel<kReadVolatile>;
    case kReadWeak: return reduceKernel<kReadWeak>;
    case kReadNc: return reduceKernel<kReadNc>;
    case kReadVolatile16: return reduceKernel<kReadVolatile16>;
    case kStoreRemote: return reduceKernel<kStoreRemote>;
    default: return reduceKernel<kCpAsync>;
  }
}

int main() {
  const long bytes = 128L << 20;  // per GPU: the output of a 256 MiB ReduceScatter on 2 ranks
  const long nPacks = bytes / 16;
  uint4 *src[2], *loc[2], *out[2];
  cudaStream_t st[2];
  cudaEvent_t ev[2][2];
  const int smemBytes = kThreads * kStages * kCpU * 16;
  for (int g = 0; g < 2; g++) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&src[g], bytes));
    CK(cudaMalloc(&loc[g], bytes));
    CK(cudaMalloc(&out[g], bytes));
    CK(cudaMemset(src[g], 0, bytes));
    CK(cudaMemset(loc[g], 0, bytes));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&ev[g][0]));
    CK(cudaEventCreate(&ev[g][1]));
    CK(cudaFuncSetAttribute(reduceKernel<kCpAsync>, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes));
  }
  printf("per GPU %ld MiB from the peer, %d threads, steps of %ld KiB; GB/s = peer bytes / time (median of 9)\n",
         bytes >> 20, kThreads, kStepBytes >> 10);
  printf("%-32s", "mode \\ CTAs");
  const int ctas[] = {8, 12, 16, 24, 32};
  for (int c : ctas) printf("%8d", c);
  printf("\n");
  for (int m = 0; m <= kCpAsync; m++) {
    printf("%-32s", kModeName[m]);
    for (int c : ctas) {
      std::vector<float> t;
      for (int rep = 0; rep < 10; rep++) {
        for (int g = 0; g < 2; g++) {
          CK(cudaSetDevice(g));
          CK(cudaEventRecord(ev[g][0], st[g]));
          const uint4* remote = src[1 - g];
          uint4* dst = m == kStoreRemote ? out[1 - g] : out[g];
          kernelOf(m)<<<c, kThreads, m == kCpAsync ? smemBytes : 0, st[g]>>>(remote, loc[g], dst, nPacks);
          CK(cudaGetLastError());
          CK(cudaEventRecord(ev[g][1], st[g]));
        }
        float worst = 0;
        for (int g = 0; g < 2; g++) {
          CK(cudaSetDevice(g));
          CK(cudaEventSynchronize(ev[g][1]));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, ev[g][0], ev[g][1]));
          worst = std::max(worst, ms);
        }
        if (rep > 0) t.push_back(worst);
      }
      std::sort(t.begin(), t.end());
      printf("%8.1f", bytes / (t[t.size() / 2] * 1e-3) / 1e9);
    }
    printf("\n");
  }
  return 0;
}
