// Standalone experiment of 2026-11-22 (results: docs/performance-log.md, 2026-11-22). Build and run on a
// 4-GPU machine: nvcc -O3 -arch=sm_90 -o cebcast 2026-11-22-cebcast.cu -lcuda && ./cebcast
// (its "shift" half never finished within the time limit; only the broadcast half was measured)
// Experiment: copy-engine pipelines between 4 GPUs with stream memory operations as flags.
// bcast: ring 0->1->2->3, each hop CE copy into the next GPU's staging slot, local CE copy out.
// shift: every GPU sends to the next through staging (sendrecv ring shift).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cuda.h>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)
#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char* s; cuGetErrorString(e, &s); printf("%s:%d %s\n", __FILE__, __LINE__, s); exit(1);} } while (0)

const int N = 4, S = 4;
struct Gpu { char* user; char* out; char* stg; uint64_t* flags; cudaStream_t a, b; };
// flags in GPU g: [0] tail (written by prev), [1] head (written by next, for g's sends), [2] done (local)
Gpu G[N];
uint64_t* goFlag;  // host pinned
uint64_t base = 0; // flag value base (monotonic across runs)

void waitGe(cudaStream_t s, uint64_t* p, uint64_t v) { CU(cuStreamWaitValue64((CUstream)s, (CUdeviceptr)p, v, CU_STREAM_WAIT_VALUE_GEQ)); }
void write(cudaStream_t s, uint64_t* p, uint64_t v) { CU(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)p, v, 0)); }

double run(bool bcast, size_t bytes, size_t chunk, double* enqUs, bool localCe) {
  size_t nChunks = (bytes + chunk - 1) / chunk;
  for (int g = 0; g < N; g++) { CK(cudaSetDevice(g)); CK(cudaDeviceSynchronize()); }
  auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < nChunks; k++) {
    size_t off = k * chunk, n = std::min(chunk, bytes - off);
    uint64_t K = base + k;
    for (int g = 0; g < N; g++) {
      CK(cudaSetDevice(g));
      int next = (g + 1) % N;
      bool recv = bcast ? g != 0 : true;
      bool send = bcast ? g != N - 1 : true;
      if (recv) {
        waitGe(G[g].a, &G[g].flags[0], K + 1);
        CK(cudaMemcpyAsync((bcast ? G[g].user : G[g].out) + off, G[g].stg + (K % S) * chunk, n, cudaMemcpyDeviceToDevice, G[g].a));
        if (bcast && send) write(G[g].a, &G[g].flags[2], K + 1);
        write(G[g].a, &G[(g + N - 1) % N].flags[1], K + 1);
      }
      if (send) {
        if (bcast && recv) waitGe(G[g].b, &G[g].flags[2], K + 1);
        if (K + 1 > S) waitGe(G[g].b, &G[g].flags[1], K + 1 - S);
        CK(cudaMemcpyAsync(G[next].stg + (K % S) * chunk, G[g].user + off, n, cudaMemcpyDeviceToDevice, G[g].b));
        write(G[g].b, &G[next].flags[0], K + 1);
      }
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  *enqUs = std::chrono::duration<double, std::micro>(t1 - t0).count();
  for (int g = 0; g < N; g++) { CK(cudaSetDevice(g)); CK(cudaStreamSynchronize(G[g].a)); CK(cudaStreamSynchronize(G[g].b)); }
  auto t3 = std::chrono::steady_clock::now();
  base += nChunks;
  return std::chrono::duration<double, std::micro>(t3 - t0).count();
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  CU(cuInit(0));
  const size_t maxBytes = 1ull << 30, maxChunk = 16 << 20;
  CK(cudaHostAlloc(&goFlag, 64, cudaHostAllocMapped | cudaHostAllocPortable));
  for (int g = 0; g < N; g++) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < N; p++) if (p != g) CK(cudaDeviceEnablePeerAccess(p, 0));
    CK(cudaMalloc(&G[g].user, maxBytes)); CK(cudaMalloc(&G[g].out, maxBytes)); CK(cudaMalloc(&G[g].stg, S * maxChunk));
    CK(cudaMalloc(&G[g].flags, 4096)); CK(cudaMemset(G[g].flags, 0, 4096));
    CK(cudaMemset(G[g].user, g == 0 ? 7 : 0, maxBytes));
    CK(cudaStreamCreateWithFlags(&G[g].a, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&G[g].b, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());
  }
  for (int mode = 0; mode < 2; mode++) {
    printf("== %s: GB/s (algbw, median of 5), enqueue us ==\n", mode == 0 ? "bcast" : "shift");
    for (size_t bytes : {64ull << 20, 256ull << 20, 1ull << 30}) {
      for (size_t chunk : {2u << 20, 4u << 20, 8u << 20, 16u << 20}) {
        std::vector<double> r; double enq = 0;
        for (int it = 0; it < 6; it++) { double us = run(mode == 0, bytes, chunk, &enq, true); if (it) r.push_back(bytes / us / 1e3); }
        std::sort(r.begin(), r.end());
        printf("%5zu MiB chunk %2zu MiB: %7.1f GB/s  enqueue %7.0f us\n", bytes >> 20, chunk >> 20, r[r.size() / 2], enq);
      }
    }
  }
  // check bcast data
  std::vector<char> h(1 << 20);
  for (int g = 0; g < N; g++) { CK(cudaSetDevice(g)); CK(cudaMemcpy(h.data(), G[g].user + (1ull << 30) - (1 << 20), 1 << 20, cudaMemcpyDeviceToHost)); printf("gpu %d last MiB byte %d\n", g, h[12345]); }
  return 0;
}
