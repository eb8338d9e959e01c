// Standalone experiment (docs/performance-log.md, 2026-11-22): does the placement of the CTAs that store
// into a peer (which SMs, which GPCs) decide the NVLink store bandwidth, at the CTA counts the
// point-to-point kernel uses (16-32 senders)? Build and run on a 2- or 4-GPU machine:
//   nvcc -O3 -arch=sm_90 -o placement 2026-11-22-p2p-placement.cu && ./placement
// Every GPU g stores 1 GiB into GPU (g+1) % n at once (a ring shift; on 2 GPUs both directions).
// k "sender" CTAs copy local -> peer in 512 KiB steps (a barrier per step, like a Simple step); k
// "receiver" CTAs copy a local buffer into another (the receive side's work); every other CTA exits.
// Which CTAs are senders:
//   order:        blocks 0..k-1 send, k..2k-1 receive (Braid's point-to-point grid today)
//   interleaved:  even blocks send, odd blocks receive
//   sm-first:     the CTA on SM s sends for s < k (one CTA per SM, 132 launched)
//   sm-spread:    SMs s = i * nSM / k send
//   cluster2:     clusters of 2 with the spread policy; rank 0 of a cluster sends, rank 1 receives
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x)                                                                     \
  do {                                                                            \
    cudaError_t e = (x);                                                          \
    if (e != cudaSuccess) {                                                       \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));           \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

constexpr int kMaxSm = 256;
struct Args {
  uint4* peerDst;
  const uint4* src;
  uint4* localDst;
  const uint4* localSrc;
  int64_t nPacks;
  int64_t stepPacks;
  int k;
  int mode;  // 0 order, 1 interleaved, 2 by SM (roleBySm), 3 cluster2
  int roleBySm[kMaxSm];  // mode 2: sender index, or -1
  int* smOfSender;       // where sender i ran
  int dynamic;           // senders take steps from *nextStep (atomicAdd) instead of round robin
  unsigned long long* nextStep;
  unsigned long long* senderNs;  // per sender: elapsed ns, then steps done
};

__device__ __forceinline__ unsigned smId() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ unsigned clusterRank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ void copySteps(uint4* dst, const uint4* src, int64_t nPacks, int64_t stepPacks, int index, int count) {
  constexpr int U = 8;
  const int tid = threadIdx.x, nthreads = blockDim.x, lane = tid % 32;
  for (int64_t stepBase = index * stepPacks; stepBase < nPacks; stepBase += count * stepPacks) {
    const int64_t n = min(stepPacks, nPacks - stepBase);
    const uint4* s = src + stepBase;
    uint4* d = dst + stepBase;
    for (int64_t base = (tid / 32) * 32 * U + lane; base + (U - 1) * 32 < n; base += (nthreads / 32) * 32 * U) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = s[base + u * 32];
#pragma unroll
      for (int u = 0; u < U; u++) d[base + u * 32] = v[u];
    }
    __syncthreads();
  }
}

__device__ __forceinline__ unsigned long long globalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Steps taken from a shared counter: a fast SM moves more of them than a slow one.
__device__ int dynamicSteps(uint4* dst, const uint4* src, int64_t nPacks, int64_t stepPacks,
                            unsigned long long* nextStep) {
  __shared__ long long step;
  constexpr int U = 8;
  const int tid = threadIdx.x, nthreads = blockDim.x, lane = tid % 32;
  int done = 0;
  while (true) {
    if (tid == 0) step = static_cast<long long>(atomicAdd(nextStep, 1ull));
    __syncthreads();
    const int64_t stepBase = step * stepPacks;
    __syncthreads();
    if (stepBase >= nPacks) break;
    done++;
    const int64_t n = min(stepPacks, nPacks - stepBase);
    const uint4* s = src + stepBase;
    uint4* d = dst + stepBase;
    for (int64_t base = (tid / 32) * 32 * U + lane; base + (U - 1) * 32 < n; base += (nthreads / 32) * 32 * U) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) v[u] = s[base + u * 32];
#pragma unroll
      for (int u = 0; u < U; u++) d[base + u * 32] = v[u];
    }
  }
  return done;
}

__global__ void __launch_bounds__(512, 1) placeCopy(const __grid_constant__ Args a) {
  int send = -1, recv = -1;
  const int b = blockIdx.x;
  if (a.mode == 0) {
    if (b < a.k) send = b;
    else if (b < 2 * a.k) recv = b - a.k;
  } else if (a.mode == 1) {
    if (b < 2 * a.k) (b % 2 == 0 ? send : recv) = b / 2;
  } else if (a.mode == 2) {
    send = a.roleBySm[smId()];
  } else {
    if (b < 2 * a.k) (clusterRank() == 0 ? send : recv) = b / 2;
  }
  if (send >= 0) {
    const unsigned long long t0 = globalNs();
    int steps = 0;
    if (a.dynamic) {
      steps = dynamicSteps(a.peerDst, a.src, a.nPacks, a.stepPacks, a.nextStep);
    } else {
      copySteps(a.peerDst, a.src, a.nPacks, a.stepPacks, send, a.k);
    }
    if (threadIdx.x == 0) {
      a.smOfSender[send] = smId();
      a.senderNs[2 * send] = globalNs() - t0;
      a.senderNs[2 * send + 1] = steps;
    }
  } else if (recv >= 0) {
    copySteps(a.localDst, a.localSrc, a.nPacks, a.stepPacks, recv, a.k);
  }
}

// GPC map: clusters of `size` CTAs (one per SM) share a GPC; each CTA notes its SM by cluster.
__global__ void clusterMap(int* smOfBlock) {
  if (threadIdx.x == 0) smOfBlock[blockIdx.x] = smId();
}

// Runs the senders on the SMs `sms` (sender i on sms[i]) of every GPU at once (or only GPU 0 when
// oneWay); GB/s per GPU, median of 7.
double runOnSms(const std::vector<int>& sms, bool oneWay, int n, int nSm, const std::vector<uint4*>& src,
                const std::vector<uint4*>& dst, std::vector<cudaStream_t>& st, std::vector<cudaEvent_t>& e0,
                std::vector<cudaEvent_t>& e1, const std::vector<int*>& smOf, int smem) {
  Args a{};
  a.nPacks = (1ll << 30) / 16;
  a.stepPacks = (512 << 10) / 16;
  a.k = static_cast<int>(sms.size());
  a.mode = 2;
  for (int s = 0; s < kMaxSm; s++) a.roleBySm[s] = -1;
  for (int i = 0; i < a.k; i++) a.roleBySm[sms[i]] = i;
  const int gpus = oneWay ? 1 : n;
  std::vector<double> r;
  for (int it = 0; it < 8; it++) {
    for (int g = 0; g < gpus; g++) {
      CK(cudaSetDevice(g));
      a.peerDst = dst[(g + 1) % n];
      a.src = src[g];
      a.smOfSender = smOf[g];
      CK(cudaEventRecord(e0[g], st[g]));
      placeCopy<<<nSm, 512, smem, st[g]>>>(a);
      CK(cudaEventRecord(e1[g], st[g]));
    }
    float worst = 0;
    for (int g = 0; g < gpus; g++) {
      CK(cudaSetDevice(g));
      CK(cudaEventSynchronize(e1[g]));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
      worst = std::max(worst, ms);
    }
    if (it > 0) r.push_back((1ull << 30) / (worst * 1e-3) / 1e9);
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

int main() {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  n = std::min(n, 4);
  if (n < 2) {
    printf("needs 2 GPUs\n");
    return 1;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int nSm = prop.multiProcessorCount;
  const size_t bytes = 1ull << 30;
  const int64_t nPacks = bytes / 16, stepPacks = (512 << 10) / 16;
  std::vector<uint4*> src(n), dst(n), lsrc(n), ldst(n);
  std::vector<int*> smOf(n);
  std::vector<cudaStream_t> st(n);
  std::vector<cudaEvent_t> e0(n), e1(n);
  // One CTA per SM whatever the registers: dynamic shared memory over half an SM's.
  const int smem = 120 << 10;
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < n; p++)
      if (p != g) CK(cudaDeviceEnablePeerAccess(p, 0));
    CK(cudaMalloc(&src[g], bytes));
    CK(cudaMalloc(&dst[g], bytes));
    CK(cudaMalloc(&lsrc[g], bytes));
    CK(cudaMalloc(&ldst[g], bytes));
    CK(cudaMalloc(&smOf[g], kMaxSm * sizeof(int)));
    CK(cudaMemset(src[g], g + 1, bytes));
    CK(cudaMemset(lsrc[g], g + 3, bytes));
    CK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
    CK(cudaFuncSetAttribute(placeCopy, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(placeCopy, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  }
  printf("GPUs %d, SMs %d; ring shift of 1 GiB per GPU, 512 threads per CTA, GB/s per GPU (median of 7)\n", n, nSm);
  std::vector<unsigned long long*> counter(n), senderNs(n);
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    CK(cudaMalloc(&counter[g], sizeof(unsigned long long)));
    CK(cudaMalloc(&senderNs[g], 2 * kMaxSm * sizeof(unsigned long long)));
  }
  // Phase 1: placements, static round robin (as the FIFO channels are) against dynamic steps.
  const char* names[] = {"order", "interleaved", "sm-first", "sm-spread", "cluster2", "sm-last"};
  for (int dyn : {0, 1}) {
    for (int k : {16, 32}) {
      for (int variant : {0, 3, 5, 4, 2}) {
        Args a{};
        a.nPacks = nPacks;
        a.stepPacks = stepPacks;
        a.k = k;
        a.dynamic = dyn;
        a.mode = variant <= 1 ? variant : variant == 4 ? 3 : 2;
        for (int s = 0; s < kMaxSm; s++) a.roleBySm[s] = -1;
        if (variant == 2)
          for (int i = 0; i < k; i++) a.roleBySm[i] = i;
        if (variant == 3)
          for (int i = 0; i < k; i++) a.roleBySm[i * nSm / k] = i;
        if (variant == 5)
          for (int i = 0; i < k; i++) a.roleBySm[nSm - 1 - i] = i;
        const int grid = a.mode == 2 ? nSm : 2 * k;
        std::vector<double> r;
        for (int it = 0; it < 8; it++) {
          for (int g = 0; g < n; g++) {
            CK(cudaSetDevice(g));
            a.peerDst = dst[(g + 1) % n];
            a.src = src[g];
            a.localDst = ldst[g];
            a.localSrc = lsrc[g];
            a.smOfSender = smOf[g];
            a.nextStep = counter[g];
            a.senderNs = senderNs[g];
            CK(cudaMemsetAsync(counter[g], 0, sizeof(unsigned long long), st[g]));
            CK(cudaEventRecord(e0[g], st[g]));
            cudaLaunchConfig_t cfg{};
            cudaLaunchAttribute attrs[2];
            cfg.gridDim = dim3(grid);
            cfg.blockDim = dim3(512);
            cfg.dynamicSmemBytes = smem;
            cfg.stream = st[g];
            if (a.mode == 3) {
              attrs[0].id = cudaLaunchAttributeClusterDimension;
              attrs[0].val.clusterDim.x = 2;
              attrs[0].val.clusterDim.y = 1;
              attrs[0].val.clusterDim.z = 1;
              attrs[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
              attrs[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
              cfg.attrs = attrs;
              cfg.numAttrs = 2;
            }
            CK(cudaLaunchKernelEx(&cfg, placeCopy, a));
            CK(cudaEventRecord(e1[g], st[g]));
          }
          float worst = 0;
          for (int g = 0; g < n; g++) {
            CK(cudaSetDevice(g));
            CK(cudaEventSynchronize(e1[g]));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
            worst = std::max(worst, ms);
          }
          if (it > 0) r.push_back(bytes / (worst * 1e-3) / 1e9);
        }
        // The last run's senders on GPU 0: SM, time (us) and steps, slowest first.
        CK(cudaSetDevice(0));
        std::vector<int> where(k);
        std::vector<unsigned long long> ns(2 * k);
        CK(cudaMemcpy(where.data(), smOf[0], k * sizeof(int), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(ns.data(), senderNs[0], 2 * k * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        std::vector<int> order(k);
        for (int i = 0; i < k; i++) order[i] = i;
        std::sort(order.begin(), order.end(), [&](int x, int y) { return ns[2 * x] > ns[2 * y]; });
        std::sort(r.begin(), r.end());
        printf("%s k=%-3d %-12s %7.1f  (%.1f-%.1f)  sm:us/steps:", dyn ? "dynamic" : "static ", k, names[variant],
               r[r.size() / 2], r.front(), r.back());
        for (int i : order) printf(" %d:%.0f/%llu", where[i], ns[2 * i] / 1e3, ns[2 * i + 1]);
        printf("\n");
      }
    }
  }
  // Phase 2: the GPC map, then sender SM sets built from it.
  CK(cudaSetDevice(0));
  CK(cudaFuncSetAttribute(clusterMap, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(clusterMap, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<std::vector<int>> gpcs;
  for (int size : {16, 8}) {
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(32);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int maxClusters = 0;
    cfg.gridDim = dim3(size);
    if (cudaOccupancyMaxActiveClusters(&maxClusters, clusterMap, &cfg) != cudaSuccess || maxClusters == 0) {
      cudaGetLastError();
      continue;
    }
    cfg.gridDim = dim3(size * maxClusters);
    CK(cudaLaunchKernelEx(&cfg, clusterMap, smOf[0]));
    CK(cudaDeviceSynchronize());
    std::vector<int> where(size * maxClusters);
    CK(cudaMemcpy(where.data(), smOf[0], where.size() * sizeof(int), cudaMemcpyDeviceToHost));
    printf("clusters of %d: %d resident; SMs by cluster:", size, maxClusters);
    for (int c = 0; c < maxClusters; c++) {
      std::vector<int> g(where.begin() + c * size, where.begin() + (c + 1) * size);
      std::sort(g.begin(), g.end());
      printf(" [");
      for (int x : g) printf("%d ", x);
      printf("]");
      if (size == 16) gpcs.push_back(g);
    }
    printf("\n");
  }
  if (!gpcs.empty() && getenv("PHASE2") != nullptr) {
    // Sets of k senders: filling one GPC after another; one SM per GPC in turn; both SMs of a
    // TPC (2i, 2i+1) spread over the GPCs in turn; the highest SM ids.
    for (int k : {8, 16, 32}) {
      std::vector<std::pair<const char*, std::vector<int>>> sets;
      std::vector<int> fill, roundRobin, pairsRr, last;
      for (auto& g : gpcs)
        for (int x : g)
          if (static_cast<int>(fill.size()) < k) fill.push_back(x);
      for (size_t i = 0; static_cast<int>(roundRobin.size()) < k && i < 32; i++)
        for (auto& g : gpcs)
          if (i < g.size() && static_cast<int>(roundRobin.size()) < k) roundRobin.push_back(g[i]);
      for (size_t i = 0; static_cast<int>(pairsRr.size()) < k && i < 32; i += 2)
        for (auto& g : gpcs)
          if (i + 1 < g.size() && static_cast<int>(pairsRr.size()) + 2 <= k) {
            pairsRr.push_back(g[i]);
            pairsRr.push_back(g[i + 1]);
          }
      std::vector<int> first;
      for (int i = 0; i < k; i++) last.push_back(nSm - 1 - i);
      for (int i = 0; i < k; i++) first.push_back(i);
      sets.push_back({"sm-first", first});
      sets.push_back({"gpc-fill", fill});
      sets.push_back({"gpc-roundrobin", roundRobin});
      sets.push_back({"gpc-pairs-rr", pairsRr});
      sets.push_back({"sm-last", last});
      for (auto& [name, sms] : sets) {
        if (static_cast<int>(sms.size()) != k) continue;
        double both = runOnSms(sms, false, n, nSm, src, dst, st, e0, e1, smOf, smem);
        double one = runOnSms(sms, true, n, nSm, src, dst, st, e0, e1, smOf, smem);
        printf("k=%-3d %-15s ring %7.1f  one-way %7.1f  SMs:", k, name, both, one);
        for (int x : sms) printf(" %d", x);
        printf("\n");
      }
    }
  }
  return 0;
}
