// The body every collective kernel runs: pick the protocol's step function for the work's element
// type and functor at run time (visitTypeOp; Broadcast and AllGather as bytes, never per type or
// op), then run the ring algorithm on this CTA's channel part of the data.
//
// Contract: called by the threads that run the algorithm (ProtoState::tid in [0, nthreads)), all
// with the same arguments. On return every step of the operation has been done (or abandoned after
// an abort) and the channel's steps are written back to DevComm by thread 0. Picker is a protocol's
// table: template run<T, Fn>() records &xxxStep<T, Fn>, and chunkBytes() the payload per step.
#pragma once

#include <cstdint>

#include "device/coll/ring_colls.h"
#include "device/dev_types.h"
#include "device/prims/prims_common.h"
#include "device/reduce/reduce_dispatch.h"
#include "device/reduce/reduce_ops.h"
#include "device/reduce/work_scalar_device.h"

namespace braid {

// What a Picker records for one (T, Fn).
struct StepChoice {
  StepFn fn = nullptr;
  int64_t elemSize = 1;
  bool hasOps = false;  // the functor has a preOp or a postOp

  template <typename T, typename Fn>
  __device__ void set(StepFn f) {
    fn = f;
    elemSize = sizeof(T);
    hasOps = Fn::kHasPreOp || Fn::kHasPostOp;
  }
};

__device__ __forceinline__ void runRing(const Prims& prims, const RingInfo& ring, const DevWork& work, int64_t count,
                                        ChannelPart part, int64_t chunkElems, bool hasOps, DirectFlags d) {
  const char* src = static_cast<const char*>(work.sendbuff);
  char* dst = static_cast<char*>(work.recvbuff);
  if (ring.n == 1) {
    // AllGather's and ReduceScatter's block of rank 0 is the whole buffer.
    localCopy(prims, src, dst, part, chunkElems, hasOps);
    return;
  }
  if (d.send == kStepDirectSend) prims.enter();  // before the first write into the next rank's buffer
  switch (static_cast<CollId>(work.coll)) {
    case CollId::kAllReduce:
      ringAllReduce(prims, ring, src, dst, part, chunkElems, 16 / prims.elemSize, d);
      break;
    case CollId::kReduceScatter:
      ringReduceScatter(prims, ring, src, dst, count, part, chunkElems, d);
      break;
    case CollId::kReduce:
      ringReduce(prims, ring, src, dst, work.root, part, chunkElems, d);
      break;
    case CollId::kAllGather:
      ringAllGather(prims, ring, src, dst, count, part, chunkElems, d);
      break;
    case CollId::kBroadcast:
      ringBroadcast(prims, ring, src, dst, work.root, part, chunkElems, d);
      break;
  }
  if (d.send == kStepReadSend) prims.drain();  // before the user may overwrite what the next rank reads
}

// `peers` (Simple only; null otherwise): the operation's registered buffers, for a direct ring
// (write-direct or read-direct by collective, see DevRegPeers).
template <typename Picker>
__device__ __forceinline__ void runWork(const DevKernelArgs& args, ProtoState& state,
                                        const DevRegPeers* peers = nullptr) {
  const DevWork& work = args.work;
  const auto coll = static_cast<CollId>(work.coll);
  Picker picker;
  int64_t count = static_cast<int64_t>(work.count);
  if (coll == CollId::kBroadcast || coll == CollId::kAllGather) {
    picker.template run<uint8_t, FuncSum<uint8_t>>();  // a copy never reduces
    count *= devTypeSize(work.dtype);
  } else if (!visitTypeOp(work.dtype, work.redOp, picker)) {
    return;  // the host validates the pair; an invalid one runs nothing on any rank
  }
  const StepChoice& c = picker.choice;
  const Prims prims{&state, c.fn, c.elemSize};
  const int64_t chunkElems = Picker::chunkBytes(*args.comm, work.chunkBytes) / c.elemSize;
  const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16 / c.elemSize);
  const DevChannel* channel = &args.comm->channels[blockIdx.x];
  const RingInfo ring{channel->ringRanks, args.comm->nranks, channel->ringIndex, args.comm->rank};
  const bool direct = peers != nullptr && ring.n > 1;
  const bool read = readsPeerSendBuffers(coll);
  if (direct && read) {
    state.directDelta = peers->buff[ring.rankAt(ring.index - 1)] - static_cast<const char*>(work.sendbuff);
  } else if (direct) {
    state.directDelta = peers->buff[ring.rankAt(ring.index + 1)] - static_cast<const char*>(work.recvbuff);
  }
  runRing(prims, ring, work, count, part, chunkElems, c.hasOps, directFlags(direct, read));
  finishProtoState(state);
}

}  // namespace braid
