// The direct algorithms on the Simple protocol (prims/prims_direct_simple.h): the five collectives
// as directChunk composes them for LL (coll/direct_colls.h), one hop each, and the two-shot
// AllReduce (DevWork::twoShot), a direct ReduceScatter and a direct AllGather chunk by chunk:
//
//   reduce   send block q's chunk to rank q; reduce every rank's chunk of block `rank` in rank order
//            into the receive buffer's block `rank`
//   gather   send that result to every peer; peer q's result goes to block q
//
// Each rank sends 2 (n - 1) / n of the data instead of the one-shot's n - 1 times, in two hops
// instead of the ring's 2 (n - 1). Blocks are ceil(count / n) elements rounded up to 16 bytes (the
// last ones short or empty), and every rank computes the same chunks of them, so empty shares still
// take their steps. On buffers in symmetric windows (DevWork::symmetric) it runs the symmetric
// kernels instead (coll/symmetric_colls.h).
#pragma once

#include <cstdint>

#include "device/coll/direct_colls.h"
#include "device/coll/symmetric_colls.h"
#include "device/prims/prims_direct_simple.h"

namespace braid {

// The reduction of the (T, Fn) that visitTypeOp picks.
struct DirectSimplePicker {
  DirectSimpleReduceFn reduce = nullptr;
  int64_t elemSize = 1;
  template <typename T, typename Fn>
  __device__ void run() {
    reduce = &simpleDirectReduce<T, Fn>;
    elemSize = sizeof(T);
  }
};

// The two-shot AllReduce's chunk [o, o + len) of every block of `block` elements: its reduce half
// (gather false) or its gather half.
__device__ __forceinline__ DirectChunk twoShotChunk(const DevWork& work, int rank, int n, int64_t count, int64_t block,
                                                    int64_t elemSize, int64_t o, int64_t len, bool gather) {
  const char* src = static_cast<const char*>(work.sendbuff);
  char* dst = static_cast<char*>(work.recvbuff);
  const uint32_t everyPeer = (1u << (n - 1)) - 1;
  const int64_t blockBytes = block * elemSize;
  char* ownResult = dst + rank * blockBytes + o * elemSize;
  DirectChunk c{};
  c.nelem = len;
  c.blockElems = block;
  c.blockCount = count;
  c.blockOffset = o;
  c.sendMask = everyPeer;
  c.recvMask = everyPeer;
  if (!gather) {
    c.send = src + o * elemSize;
    c.sendStride = blockBytes;
    c.sendsPeerBlock = true;
    c.reduceAll = true;
    c.own = src + rank * blockBytes + o * elemSize;
    c.dst = ownResult;
  } else {
    c.send = ownResult;
    c.recv = dst + o * elemSize;
    c.recvStride = blockBytes;
    c.recvsPeerBlock = true;
  }
  return c;
}

// The whole work of this CTA. Called by every thread of the CTA.
__device__ __forceinline__ void runDirectSimpleWork(const DevKernelArgs& args, PrimsShared* shared) {
  const DevWork& work = args.work;
  const auto coll = static_cast<CollId>(work.coll);
  DirectSimplePicker picker;
  int64_t count = static_cast<int64_t>(work.count);
  if (coll == CollId::kBroadcast || coll == CollId::kAllGather) {
    count *= devTypeSize(work.dtype);  // a copy never reduces: bytes, no reduction function
  } else if (!visitTypeOp(work.dtype, work.redOp, picker)) {
    return;  // the host validates the pair; an invalid one runs nothing on any rank
  }
  __shared__ DirectSimpleShared direct;
  DevDirectChannel* ch = &args.comm->direct[blockIdx.x];
  DirectSimpleState::load(ch, args.comm, shared, &direct, workScalar(work), work.sharedSteps != 0);
  DirectSimpleState s(&direct);
  const int64_t es = picker.elemSize;
  if (work.symmetric != 0) {
    runSymmetricWork(work, s, picker.reduce, es, count);
    const uint32_t everyPeer = (1u << (s.nranks - 1)) - 1;
    s.finish(ch, everyPeer, everyPeer, work.sharedSteps != 0);
    return;
  }
  const int64_t chunkElems = clampChunkBytes(static_cast<int64_t>(direct.slotBytes), work.chunkBytes) / es;
  DirectChunk c{};
  if (coll == CollId::kAllReduce && work.twoShot != 0 && s.nranks > 1) {
    const int64_t block = roundUp(divUp(count, s.nranks), 16 / es);
    const ChannelPart part = channelPart(block, blockIdx.x, work.nChannels, 16 / es);
    for (int64_t o = part.begin; o < part.end; o += chunkElems) {
      const int64_t len = minI64(chunkElems, part.end - o);
      c = twoShotChunk(work, s.rank, s.nranks, count, block, es, o, len, false);
      simpleDirectChunk(s, c, es, picker.reduce);
      c = twoShotChunk(work, s.rank, s.nranks, count, block, es, o, len, true);
      simpleDirectChunk(s, c, es, picker.reduce);
    }
  } else {
    const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16 / es);
    for (int64_t o = part.begin; o < part.end; o += chunkElems) {
      c = directChunk(work, s.rank, s.nranks, count, es, o, minI64(chunkElems, part.end - o));
      simpleDirectChunk(s, c, es, picker.reduce);
    }
  }
  s.finish(ch, c.sendMask, c.recvMask, work.sharedSteps != 0);
}

}  // namespace braid
