// Balanced point-to-point operations: the CTAs of a peer's channels share one large operation in
// chunks they take as they go, instead of each moving a fixed part of it.
//
// Why: the SMs of an H200 do not store into a peer at the same rate. 2 H200, 16 CTAs each storing
// 1 GiB / 16 into the peer (scripts/experiments/tune-plans/2026-11-22-p2p-placement.cu): some SMs moved 4x
// more than others in the same time, so with fixed parts the slowest CTA set the time, and the pair
// reached 318-367 GB/s depending on which SMs the CTAs landed on; with chunks taken from a shared
// counter every placement reached 368-370 GB/s. In the point-to-point kernel (2 H200, 32 channels,
// 128 KiB chunks) it gained 2-3.5% from 256 MiB (sendrecv at 1 GiB 363.6 GB/s against 351.3 with
// fixed parts) and lost up to 3% below 128 MiB, where the end of an operation (a CTA's last chunk
// and its end step) weighs more: hence BRAID_P2P_BALANCE_BYTES.
//
// Sender (every CTA of the operation, one channel each): take the next chunk index from the
// operation's counter (atomicAdd), wait for a free slot, store the index in the slot's step tag,
// copy the chunk into the slot, and publish the step like any Simple step (the poster's system
// fence covers the tag). Once the counter runs out, one last step with tag kStepTagEnd and no
// payload tells the receiving CTA of that channel that the operation is over. Each CTA's failed
// take is exactly one, so the CTA that takes number nChunks + ctas - 1 is the last to touch the
// counter and zeroes it for the next operation that uses it (the next launch, or a graph's next
// replay).
// Receiver: wait for the step, read its tag, copy the slot to the chunk's place, until the end tag.
// Both ends count one step per chunk moved on the channel plus the end step, so the connection's
// step numbers stay equal.
#pragma once

#include <cstdint>

#include "device/prims/prims_simple.h"

namespace braid {

// The bytes of chunk `tag` (at offset tag * chunk) of an operation of `bytes`: the last may be short.
__device__ __forceinline__ int64_t balancedChunkBytes(uint64_t tag, uint64_t chunk, uint64_t bytes) {
  const uint64_t offset = tag * chunk;
  return static_cast<int64_t>(bytes - offset < chunk ? bytes - offset : chunk);
}

// One CTA's share of a balanced send. tickets: the operation's counter; ctas: the CTAs sharing it.
// Worker 0 takes the next chunk while the workers copy the current one, so the atomic's round trip
// overlaps the copy.
__device__ __noinline__ void balancedSend(ProtoState& s, const char* buff, uint64_t bytes, uint64_t chunk,
                                          uint64_t* tickets, int ctas) {
  const uint64_t nChunks = (bytes + chunk - 1) / chunk;
  auto* counter = reinterpret_cast<unsigned long long*>(tickets);
  volatile uint64_t* sharedTag = &s.shared->stepTag;
  uint64_t taken = s.tid == 0 ? atomicAdd(counter, 1ull) : 0;
  while (true) {
    if (s.tid == 0) {
      uint64_t tag = kStepTagEnd;
      if (taken < nChunks) {
        tag = taken;
      } else if (taken == nChunks + static_cast<uint64_t>(ctas) - 1) {
        atomicExch(counter, 0ull);  // the operation's last take
      }
      if (!s.abort.aborted()) {
        simpleWait(s, false, true);
        *reinterpret_cast<volatile uint64_t*>(&s.sendConn->stepTags[s.sendStep % kFifoSlotsSimple]) = tag;
      }
      if (s.abort.aborted()) tag = kStepTagEnd;
      *sharedTag = tag;
    }
    namedBarrierSync(kSimpleBarrier, s.nthreads);
    const uint64_t tag = *sharedTag;
    if (tag != kStepTagEnd) {
      if (s.tid == 0) taken = atomicAdd(counter, 1ull);
      char* slot = s.sendBuff + (s.sendStep % kFifoSlotsSimple) * s.slotBytes;
      simpleReduceCopy<uint8_t, FuncSum<uint8_t>>(
          FuncSum<uint8_t>(0), s.tid, s.nthreads, nullptr, reinterpret_cast<const uint8_t*>(buff + tag * chunk),
          nullptr, reinterpret_cast<uint8_t*>(slot), balancedChunkBytes(tag, chunk, bytes), false, false, false);
    }
    // Every worker has read the tag and written its payload before worker 0 hands the step on.
    namedBarrierSync(kSimpleBarrier, s.nthreads);
    s.sendStep++;
    if (s.tid == 0) stReleaseCta(&s.shared->sendDone, s.sendStep);
    if (tag == kStepTagEnd) return;
  }
}

// One CTA's share of a balanced receive into buff: the chunks its channel brings, until the end tag.
__device__ __noinline__ void balancedRecv(ProtoState& s, char* buff, uint64_t bytes, uint64_t chunk) {
  volatile uint64_t* sharedTag = &s.shared->stepTag;
  while (true) {
    if (s.tid == 0) {
      uint64_t tag = kStepTagEnd;
      if (!s.abort.aborted()) {
        simpleWait(s, true, false);
        // After the acquire of the tail: the tag was stored before the sender's fence.
        if (!s.abort.aborted()) tag = ldVolatile64(&s.recvConn->stepTags[s.recvStep % kFifoSlotsSimple]);
      }
      *sharedTag = tag;
    }
    namedBarrierSync(kSimpleBarrier, s.nthreads);
    const uint64_t tag = *sharedTag;
    if (tag != kStepTagEnd && !s.abort.aborted()) {
      const char* slot = s.recvBuff + (s.recvStep % kFifoSlotsSimple) * s.slotBytes;
      simpleReduceCopy<uint8_t, FuncSum<uint8_t>>(FuncSum<uint8_t>(0), s.tid, s.nthreads,
                                                  reinterpret_cast<const uint8_t*>(slot), nullptr,
                                                  reinterpret_cast<uint8_t*>(buff + tag * chunk), nullptr,
                                                  balancedChunkBytes(tag, chunk, bytes), false, false, false);
    }
    namedBarrierSync(kSimpleBarrier, s.nthreads);
    s.recvStep++;
    if (s.tid == 0) stReleaseCta(&s.shared->recvDone, s.recvStep);
    if (tag == kStepTagEnd) return;
  }
}

}  // namespace braid
