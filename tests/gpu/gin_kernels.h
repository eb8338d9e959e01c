/*
 * gin_kernels.h -- host-callable launchers of kernels written against nccl_device.h's GIN API
 * (ncclGin over the proxy transport), for GPU tests that run them on device communicators created
 * with GIN resources. Each launches one CTA on `stream` and returns the launch's cudaError_t; the
 * device communicator is passed to the kernel by value. gin_kernels.cu says what each checks.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef BRAID_TESTS_GPU_GIN_KERNELS_H_
#define BRAID_TESTS_GPU_GIN_KERNELS_H_

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>
#include <stddef.h>
#include <stdint.h>

/* `win` holds nRanks source blocks of blockBytes at offset 0 and nRanks destination blocks at
 * offset nRanks * blockBytes. Rank r puts its source block p into world rank p's destination block
 * r (itself included) on GIN context contextIndex, with SignalInc on signal 0 and CounterInc on
 * counter 0; returns once counter 0 and signal 0 reach round * nRanks (round = 1, 2, ... for
 * successive launches on the same communicator, with no reset in between). */
cudaError_t launchGinAllToAll(const ncclDevComm& comm, ncclWindow_t win, size_t blockBytes, int contextIndex,
                              uint64_t round, cudaStream_t stream);

/* Rank r puts the uint64_t base + r into every rank's slot slotOffset + 8 * r (putValue), each
 * with a VA signal add of 1 on the target's window word at vaSignalOffset; returns once its own VA
 * signal reaches round * nRanks. */
cudaError_t launchGinPutValueVa(const ncclDevComm& comm, ncclWindow_t win, size_t slotOffset, size_t vaSignalOffset,
                                uint64_t base, uint64_t round, cudaStream_t stream);

/* What launchGinBarrierRounds found (device memory the caller zeroed): the number of slots that
 * did not hold their round's value after the barrier, and the first such slot seen. */
struct GinBarrierCheck {
  int mismatches;
  int round;
  int peer;
  int unused;
  unsigned long long got;
};

/* `rounds` rounds of: rank r putValues round * 1000 + r (no signal) into every rank's slot
 * slotOffset + 8 * r, a world barrier (index 0, fence Put | Get), a check that every slot p
 * holds round * 1000 + p (into *check), and a second barrier (fence None) before the next round
 * overwrites the slots. The barriers are GIN barriers (worldGinBarrier), or with `hybrid` the
 * hybrid barriers of barrierCount (ncclBarrier: the dense GIN barrier for the Put fence, LSA then
 * rail for None). */
cudaError_t launchGinBarrierRounds(const ncclDevComm& comm, ncclWindow_t win, size_t slotOffset, int rounds,
                                   bool hybrid, GinBarrierCheck* check, cudaStream_t stream);

/* A timed waitSignal (timeoutCycles clock64 cycles) for one more than the current value of signal
 * 0 of context 0, which no one raises meanwhile; writes the ncclResult_t it returned to *result
 * (device memory): ncclTimeout is expected. */
cudaError_t launchGinSignalTimeout(const ncclDevComm& comm, uint64_t timeoutCycles, int* result, cudaStream_t stream);

/* Layout as launchGinAllToAll's. Rank r gets world rank p's source block r into its own
 * destination block p on context 0, for every p (itself included; with lsaOnly, only the ranks of
 * its LSA team), one peer per warp at a time. Completion: with requestPerPeer, the issuing warp's
 * flushAsync for that peer and wait; otherwise one CTA-wide flush after every get. Then the block is
 * read back by the GPU (bypassing L1): sums[p] (device memory, nRanks entries) receives the sum over
 * its bytes i of byte * (i + 1), so that a completion that returned before the data landed shows.
 * Blocks not fetched keep their sums entry. `round` only names the launch. */
cudaError_t launchGinGetRound(const ncclDevComm& comm, ncclWindow_t win, size_t blockBytes, bool lsaOnly,
                              bool requestPerPeer, uint64_t round, uint64_t* sums, cudaStream_t stream);

/* Hostile descriptors: one thread writes straight into context 0's ring for its own rank, as the
 * device API's post does (claims a slot on pis, eight 16-byte write-through stores, the flag in
 * every word, GFD version 2), a descriptor no device code writes, and does not wait for it:
 *   kind 0: op 0x100, an op bit nobody defines;
 *   kind 1: an 8-byte inline put into window handle 0x7fff0001, which no window has;
 *   kind 2: an 8-byte inline put into `win` at winBytes - 4, running 4 bytes past its end.
 * `win` and winBytes are read for kind 2 only. Launches one thread. */
cudaError_t launchGinBadGfd(const ncclDevComm& comm, int kind, ncclWindow_t win, size_t winBytes, cudaStream_t stream);

#endif /* BRAID_TESTS_GPU_GIN_KERNELS_H_ */
