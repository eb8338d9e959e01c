/*
 * gin_kernels.cu -- the kernels behind gin_kernels.h: GIN puts, values, signals, counters and
 * barriers over the proxy transport, written against Braid's nccl_device.h only.
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
__global__ void ginBarrierRoundsKernel(ncclDevComm comm, ncclWindow_t win, size_t slotOffset, int rounds, int* errors) {
  ncclGin gin(comm, 0);
  ncclTeam world = ncclTeamWorld(comm);
  uint64_t* slots = static_cast<uint64_t*>(ncclGetLocalPointer(win, slotOffset));
  for (int r = 1; r <= rounds; r++) {
    for (int p = int(threadIdx.x); p < comm.nRanks; p += int(blockDim.x)) {
      gin.putValue<uint64_t>(world, p, win, slotOffset + 8 * size_t(comm.rank), uint64_t(r) * 1000 + comm.rank);
    }
    ncclGinBarrier(ncclCoopCta(), gin, ncclTeamTagWorld{}, 0);
    for (int p = int(threadIdx.x); p < comm.nRanks; p += int(blockDim.x)) {
      uint64_t got = cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(slots[p]).load(cuda::memory_order_relaxed);
      if (got != uint64_t(r) * 1000 + uint64_t(p)) atomicAdd(errors, 1);
    }
    /* No peer may overwrite the slots with the next round's values before they are checked. */
    ncclGinBarrier(ncclCoopCta(), gin, ncclTeamTagWorld{}, 0);
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
                                   int* errors, cudaStream_t stream) {
  ginBarrierRoundsKernel<<<1, kThreads, 0, stream>>>(comm, win, slotOffset, rounds, errors);
  return cudaGetLastError();
}

cudaError_t launchGinSignalTimeout(const ncclDevComm& comm, uint64_t timeoutCycles, int* result, cudaStream_t stream) {
  ginSignalTimeoutKernel<<<1, kThreads, 0, stream>>>(comm, timeoutCycles, result);
  return cudaGetLastError();
}
