// The five collectives as direct algorithms (prims/prims_direct_ll.h): what each rank sends to and
// receives from every peer, chunk by chunk, on this CTA's part of the data.
//
//   AllReduce      send the chunk to every peer; reduce every rank's chunk in rank order
//   ReduceScatter  send block q's chunk to rank q; reduce every rank's chunk of block `rank`
//   AllGather      send the chunk to every peer; peer q's chunk goes to block q, own to own
//   Broadcast      the root sends to every peer; the others receive from the root
//   Reduce         the others send to the root; the root reduces every rank's chunk
//
// Parts are channelPart's (16-byte multiples); both ends of a connection compute the same parts and
// chunks from the same count, so they count the same steps; every chunk uses the same peer slots.
// In place as for the rings: the own block is never copied onto itself.
#pragma once

#include <cstdint>

#include "device/coll/ring_colls.h"
#include "device/dev_types.h"
#include "device/prims/prims_direct_ll.h"
#include "device/reduce/reduce_dispatch.h"
#include "device/reduce/work_scalar_device.h"

namespace braid {

// The reduction of the (T, Fn) that visitTypeOp picks.
struct DirectPicker {
  DirectReduceFn reduce = nullptr;
  int64_t elemSize = 1;
  template <typename T, typename Fn>
  __device__ void run() {
    reduce = &llDirectReduceRound<T, Fn>;
    elemSize = sizeof(T);
  }
};

// The chunk [o, o + len) of the work for this rank. count: per-rank elements for AllGather and
// ReduceScatter, all elements otherwise. Peer slot k sends to rank + k + 1 and receives from
// rank - k - 1 (DirectState::sendPeer, recvPeer).
__device__ __forceinline__ DirectChunk directChunk(const DevWork& work, int rank, int n, int64_t count,
                                                   int64_t elemSize, int64_t o, int64_t len) {
  const char* src = static_cast<const char*>(work.sendbuff) + o * elemSize;
  char* dst = static_cast<char*>(work.recvbuff) + o * elemSize;
  const int64_t block = count * elemSize;  // bytes between two ranks' blocks (AllGather, ReduceScatter)
  const uint32_t everyPeer = (1u << (n - 1)) - 1;
  DirectChunk c{};
  c.nelem = len;
  switch (static_cast<CollId>(work.coll)) {
    case CollId::kAllReduce:
      c.send = src;
      c.sendMask = everyPeer;
      c.recvMask = everyPeer;
      c.reduceAll = true;
      c.own = src;
      c.dst = dst;
      break;
    case CollId::kReduceScatter:
      c.send = src;
      c.sendStride = block;
      c.sendMask = everyPeer;
      c.recvMask = everyPeer;
      c.reduceAll = true;
      c.own = src + rank * block;
      c.dst = dst;
      break;
    case CollId::kAllGather:
      c.send = src;
      c.sendMask = everyPeer;
      c.recv = dst;
      c.recvStride = block;
      c.recvMask = everyPeer;
      if (src != dst + rank * block) {
        c.copySrc = src;
        c.copyDst = dst + rank * block;
      }
      break;
    case CollId::kBroadcast:
      if (rank == work.root) {
        c.send = src;
        c.sendMask = everyPeer;
        if (src != dst) {
          c.copySrc = src;
          c.copyDst = dst;
        }
      } else {
        c.recv = dst;
        c.recvMask = 1u << ((rank - work.root + n) % n - 1);
      }
      break;
    case CollId::kReduce:
      if (rank == work.root) {
        c.recvMask = everyPeer;
        c.reduceAll = true;
        c.own = src;
        c.dst = dst;
      } else {
        c.send = src;
        c.sendMask = 1u << ((work.root - rank + n) % n - 1);
      }
      break;
  }
  return c;
}

// The whole work of this CTA. Called by every thread of the CTA.
__device__ __forceinline__ void runDirectWork(const DevKernelArgs& args, PrimsShared* shared) {
  const DevWork& work = args.work;
  const auto coll = static_cast<CollId>(work.coll);
  DirectPicker picker;
  int64_t count = static_cast<int64_t>(work.count);
  if (coll == CollId::kBroadcast || coll == CollId::kAllGather) {
    count *= devTypeSize(work.dtype);  // a copy never reduces: bytes, no reduction function
  } else if (!visitTypeOp(work.dtype, work.redOp, picker)) {
    return;  // the host validates the pair; an invalid one runs nothing on any rank
  }
  __shared__ DirectShared direct;
  DevDirectChannel* ch = &args.comm->direct[blockIdx.x];
  DirectState::load(ch, args.comm, shared, &direct, workScalar(work), work.sharedSteps != 0);
  DirectState s(&direct, 0);
  const int64_t chunkElems = clampChunkBytes(s.slotBytes / 16 * 8, work.chunkBytes) / picker.elemSize;
  const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16 / picker.elemSize);
  DirectChunk c{};
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    c = directChunk(work, s.rank, s.nranks, count, picker.elemSize, o, minI64(chunkElems, part.end - o));
    llDirectChunk(s, c, picker.elemSize, picker.reduce);
  }
  s.finish(ch, c.sendMask, c.recvMask, work.sharedSteps != 0);
}

}  // namespace braid
