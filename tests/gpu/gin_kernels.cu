/*
 * gin_kernels.cu -- the kernels behind gin_kernels.h: GIN puts, gets, values, signals, counters
 * and barriers over the proxy transport, written against the public device API only (they compile
 * against Braid's nccl_device.h and NVIDIA's alike), and descriptors no device code writes, posted
 * with nothing but the proxy transport's protocol layouts.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#include "gin_kernels.h"

namespace {

constexpr int kThreads = 128;

/* Checks puts of whole blocks (several warps issuing them, one peer per warp at a time, with
 * ncclCoopWarp), that each put's SignalInc reaches its target once and its CounterInc its issuer
 * once, and waits on both by the whole CTA. */
__global__ void ginAllToAllKernel(ncclDevComm comm, ncclWindow_t win, size_t blockBytes, int contextIndex,
                                  uint64_t round) {
  ncclGin gin(comm, contextIndex);
  ncclTeam world = ncclTeamWorld(comm);
  size_t dstBase = size_t(comm.nRanks) * blockBytes;
  int warp = int(threadIdx.x) / 32, nWarps = int(blockDim.x) / 32;
  for (int p = warp; p < comm.nRanks; p += nWarps) {
    gin.put(world, p, win, dstBase + size_t(comm.rank) * blockBytes, win, size_t(p) * blockBytes, blockBytes,
            ncclGin_SignalInc{0}, ncclGin_CounterInc{0}, ncclCoopWarp());
  }
  uint64_t expected = round * uint64_t(comm.nRanks);
  gin.waitCounter(ncclCoopCta(), 0, expected);
  gin.waitSignal(ncclCoopCta(), 0, expected);
}

/* Checks putValue (the value travels inside the descriptor) posted by many threads at once to
 * different peers' rings, and VA signals: the target's window word raised by 1 per value, after
 * the value has landed. */
__global__ void ginPutValueVaKernel(ncclDevComm comm, ncclWindow_t win, size_t slotOffset, size_t vaSignalOffset,
                                    uint64_t base, uint64_t round) {
  ncclGin gin(comm, 0);
  ncclTeam world = ncclTeamWorld(comm);
  for (int p = int(threadIdx.x); p < comm.nRanks; p += int(blockDim.x)) {
    gin.putValue<uint64_t>(world, p, win, slotOffset + 8 * size_t(comm.rank), base + uint64_t(comm.rank),
                           ncclGin_VASignalAdd{win, vaSignalOffset, 1});
  }
  gin.waitSignal(ncclCoopCta(), win, vaSignalOffset, round * uint64_t(comm.nRanks));
}

/* Checks the world GIN barrier: with the Put fence, the values peers put to the caller before
 * the barrier are in its memory after it, round after round on the same barrier index (the signal
 * shadows carry the count between sessions). */
/* A world barrier: GIN, or hybrid (see launchGinBarrierRounds). */
__device__ void worldBarrier(ncclGin& gin, bool hybrid, ncclGinFenceLevel fence) {
  if (hybrid) {
    ncclBarrier(ncclCoopCta(), ncclTeamTagWorld{}, gin, 0, cuda::memory_order_acq_rel, fence);
  } else {
    ncclGinBarrier(ncclCoopCta(), gin, ncclTeamTagWorld{}, 0, cuda::memory_order_acq_rel, fence);
  }
}

__global__ void ginBarrierRoundsKernel(ncclDevComm comm, ncclWindow_t win, size_t slotOffset, int rounds, bool hybrid,
                                       GinBarrierCheck* check) {
  ncclGin gin(comm, 0);
  ncclTeam world = ncclTeamWorld(comm);
  uint64_t* slots = static_cast<uint64_t*>(ncclGetLocalPointer(win, slotOffset));
  for (int r = 1; r <= rounds; r++) {
    for (int p = int(threadIdx.x); p < comm.nRanks; p += int(blockDim.x)) {
      gin.putValue<uint64_t>(world, p, win, slotOffset + 8 * size_t(comm.rank), uint64_t(r) * 1000 + comm.rank);
    }
    worldBarrier(gin, hybrid, ncclGinFenceLevel::Put | ncclGinFenceLevel::Get);
    for (int p = int(threadIdx.x); p < comm.nRanks; p += int(blockDim.x)) {
      uint64_t got = cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(slots[p]).load(cuda::memory_order_relaxed);
      if (got != uint64_t(r) * 1000 + uint64_t(p) && atomicAdd(&check->mismatches, 1) == 0) {
        check->round = r;
        check->peer = p;
        check->got = got;
      }
    }
    /* No peer may overwrite the slots with the next round's values before they are checked. */
    worldBarrier(gin, hybrid, ncclGinFenceLevel::None);
  }
}

/* Checks that a timed signal wait gives up with ncclTimeout. */
__global__ void ginSignalTimeoutKernel(ncclDevComm comm, uint64_t timeoutCycles, int* result) {
  ncclGin gin(comm, 0);
  uint64_t now = gin.readSignal(0);
  ncclResult_t ret = gin.waitSignal(ncclCoopCta(), 0, now + 1, 64, cuda::memory_order_acquire, timeoutCycles);
  /* A timed wait's result is thread 0's. */
  if (threadIdx.x == 0) *result = int(ret);
}

/* Whether world rank p is in the caller's LSA team (its ranks are consecutive world ranks). */
__device__ bool inLsaTeam(const ncclDevComm& comm, int p) {
  int first = comm.rank - comm.lsaRank;
  return first <= p && p < first + comm.lsaSize;
}

/* One warp: the position-weighted sum of a window block's bytes, read from L2 (not L1, which the
 * proxy's copies do not update), into *out. */
__device__ void sumBlockWarp(ncclWindow_t win, size_t offset, size_t bytes, uint64_t* out) {
  const unsigned char* b = static_cast<const unsigned char*>(ncclGetLocalPointer(win, offset));
  unsigned long long sum = 0;
  int lane = int(threadIdx.x) % 32;
  for (size_t i = size_t(lane); i < bytes; i += 32) sum += (unsigned long long)__ldcg(b + i) * (i + 1);
  for (int d = 16; d > 0; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
  if (lane == 0) *out = sum;
}

/* Checks gets (from the caller itself, from the ranks of its LSA team and, without lsaOnly, from
 * other hosts) and both ways of completing them: a peer's request waited for by the warp that
 * issued its get, or a flush of the whole context; the data read back by the GPU after either. */
__global__ void ginGetRoundKernel(ncclDevComm comm, ncclWindow_t win, size_t blockBytes, bool lsaOnly,
                                  bool requestPerPeer, uint64_t* sums) {
  ncclGin gin(comm, 0);
  ncclTeam world = ncclTeamWorld(comm);
  size_t dstBase = size_t(comm.nRanks) * blockBytes;
  int warp = int(threadIdx.x) / 32, nWarps = int(blockDim.x) / 32;
  for (int p = warp; p < comm.nRanks; p += nWarps) {
    if (lsaOnly && !inLsaTeam(comm, p)) continue;
    size_t dst = dstBase + size_t(p) * blockBytes;
    gin.get(world, p, win, size_t(comm.rank) * blockBytes, win, dst, blockBytes, ncclCoopWarp());
    if (requestPerPeer) {
      ncclGinRequest_t request;
      gin.flushAsync(world, uint32_t(p), &request, ncclCoopWarp());
      gin.wait(request, ncclCoopWarp());
      sumBlockWarp(win, dst, blockBytes, sums + p);
    }
  }
  if (requestPerPeer) return;
  gin.flush(ncclCoopCta());
  for (int p = warp; p < comm.nRanks; p += nWarps) {
    if (lsaOnly && !inLsaTeam(comm, p)) continue;
    sumBlockWarp(win, dstBase + size_t(p) * blockBytes, blockBytes, sums + p);
  }
}

/* Writes a descriptor of `kind` (see launchGinBadGfd) into context 0's ring for the caller's own
 * rank exactly as a post does, bypassing ncclGin: only the layouts of the proxy transport's
 * protocol (the same names in Braid's nccl_device/gin_proxy.h and NVIDIA's header) are used. */
__global__ void ginBadGfdKernel(ncclDevComm comm, int kind, ncclWindow_t win, size_t winBytes) {
  constexpr uint64_t kFlag = 1;
  uint64_t w[ncclGinProxyGfdQwords];
  for (int i = 0; i < ncclGinProxyGfdQwords; i++) w[i] = kFlag;
  uint64_t op = 0x100, bytes = 0;
  if (kind != 0) {
    op = ncclGinProxyOpPut | ncclGinProxyOpWithInline;
    bytes = 8;
    uint64_t handle = 0x7fff0001, offset = 0;
    if (kind == 2) {
      handle = reinterpret_cast<uint64_t>(win->ginWinsDefaultBackend[0]);
      offset = 4096 * uint64_t(win->ginOffset4K) + winBytes - 4;
    }
    w[ncclGinProxyGfdInlineLow] = kFlag | (uint64_t(0x5a5a5a5a) << 8);
    w[ncclGinProxyGfdDstOff] = kFlag | (offset << 1);
    w[ncclGinProxyGfdDstHandle] = kFlag | (handle << 1);
  }
  w[ncclGinProxyGfdHeader] = kFlag | (uint64_t(NCCL_GIN_PROXY_GFD_VERSION) << 1) | (bytes << 7);
  w[ncclGinProxyGfdHeaderExt] = kFlag | (op << 8);

  ncclGinProxyGpuCtx_t* ctx = static_cast<ncclGinProxyGpuCtx_t*>(comm.ginHandles[0]);
  int peer = comm.rank;
  uint32_t queueSize = ctx->queueSize;
  uint32_t idx = atomicAdd(&ctx->pis[peer], 1u);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ci(ctx->cis[peer]);
  // The slot is free as a post would find it (on the fresh communicators of the test it always is).
  while (queueSize <= idx - ci.load(cuda::memory_order_relaxed)) {
  }
  uint4* slot = reinterpret_cast<uint4*>(ctx->queues + size_t(peer) * queueSize + (idx & (queueSize - 1)));
  for (int i = 0; i < ncclGinProxyGfdQwords / 2; i++) {
    uint64_t a = w[2 * i], b = w[2 * i + 1];
    __stwt(slot + i, make_uint4(uint32_t(a), uint32_t(a >> 32), uint32_t(b), uint32_t(b >> 32)));
  }
}

}  // namespace

cudaError_t launchGinAllToAll(const ncclDevComm& comm, ncclWindow_t win, size_t blockBytes, int contextIndex,
                              uint64_t round, cudaStream_t stream) {
  ginAllToAllKernel<<<1, kThreads, 0, stream>>>(comm, win, blockBytes, contextIndex, round);
  return cudaGetLastError();
}

cudaError_t launchGinPutValueVa(const ncclDevComm& comm, ncclWindow_t win, size_t slotOffset, size_t vaSignalOffset,
                                uint64_t base, uint64_t round, cudaStream_t stream) {
  ginPutValueVaKernel<<<1, kThreads, 0, stream>>>(comm, win, slotOffset, vaSignalOffset, base, round);
  return cudaGetLastError();
}

cudaError_t launchGinBarrierRounds(const ncclDevComm& comm, ncclWindow_t win, size_t slotOffset, int rounds,
                                   bool hybrid, GinBarrierCheck* check, cudaStream_t stream) {
  ginBarrierRoundsKernel<<<1, kThreads, 0, stream>>>(comm, win, slotOffset, rounds, hybrid, check);
  return cudaGetLastError();
}

cudaError_t launchGinSignalTimeout(const ncclDevComm& comm, uint64_t timeoutCycles, int* result, cudaStream_t stream) {
  ginSignalTimeoutKernel<<<1, kThreads, 0, stream>>>(comm, timeoutCycles, result);
  return cudaGetLastError();
}

cudaError_t launchGinGetRound(const ncclDevComm& comm, ncclWindow_t win, size_t blockBytes, bool lsaOnly,
                              bool requestPerPeer, uint64_t round, uint64_t* sums, cudaStream_t stream) {
  (void)round;
  ginGetRoundKernel<<<1, kThreads, 0, stream>>>(comm, win, blockBytes, lsaOnly, requestPerPeer, sums);
  return cudaGetLastError();
}

cudaError_t launchGinBadGfd(const ncclDevComm& comm, int kind, ncclWindow_t win, size_t winBytes, cudaStream_t stream) {
  ginBadGfdKernel<<<1, 1, 0, stream>>>(comm, kind, win, winBytes);
  return cudaGetLastError();
}
