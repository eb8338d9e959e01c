// The body every collective kernel runs: runWork picks the protocol's step function for the work's
// element type and functor at run time (visitTypeOp; Broadcast and AllGather as bytes, never per
// type or op); runInlinedWork, in the kernels of the common pairs (inlinedPairOf), has its step
// compiled in. Either then runs the ring algorithm on this CTA's channel part of the data.
//
// Contract: called by the threads that run the algorithm (ProtoState::tid in [0, nthreads)), all
// with the same arguments. On return every step of the operation has been done (or abandoned after
// an abort) and the channel's steps are written back to DevComm by thread 0. Picker is a protocol's
// table: template run<T, Fn>() records &xxxStep<T, Fn>, chunkBytes() the payload per step, and
// (runInlinedWork) Steps the class whose run<T, Fn> is the step.
#pragma once

#include <cstdint>

#include "device/coll/ring_colls.h"
#include "device/dev_types.h"
#include "device/kernels.h"
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

template <typename P>
__device__ __forceinline__ void runRing(const P& prims, const RingInfo& ring, const DevWork& work, int64_t count,
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
      if constexpr (P::kReduces) ringAllReduce(prims, ring, src, dst, part, chunkElems, 16 / prims.elemSize, d);
      break;
    case CollId::kReduceScatter:
      if constexpr (P::kReduces) ringReduceScatter(prims, ring, src, dst, count, part, chunkElems, d);
      break;
    case CollId::kReduce:
      if constexpr (P::kReduces) ringReduce(prims, ring, src, dst, work.root, part, chunkElems, d);
      break;
    case CollId::kAllGather:
      if constexpr (P::kCopies) ringAllGather(prims, ring, src, dst, count, part, chunkElems, d);
      break;
    case CollId::kBroadcast:
      if constexpr (P::kCopies) ringBroadcast(prims, ring, src, dst, work.root, part, chunkElems, d);
      break;
  }
  if (d.send == kStepReadSend) prims.drain();  // before the user may overwrite what the next rank reads
}

// One CTA's ring as setupRing sets it up, run on any prims type.
struct RingRun {
  RingInfo ring;
  const DevWork* work;
  int64_t count;
  ChannelPart part;
  int64_t chunkElems;
  bool hasOps;
  DirectFlags d;
  template <typename P>
  __device__ __forceinline__ void operator()(const P& prims) const {
    runRing(prims, ring, *work, count, part, chunkElems, hasOps, d);
  }
};

// This CTA's ring for elements of elemSize bytes (Broadcast and AllGather: bytes). `peers`
// (Simple only; null otherwise): the operation's registered buffers, for a direct ring
// (write-direct or read-direct by collective, see DevRegPeers).
template <typename Picker>
__device__ __forceinline__ RingRun setupRing(const DevKernelArgs& args, ProtoState& state, int64_t elemSize,
                                             bool hasOps, const DevRegPeers* peers) {
  const DevWork& work = args.work;
  const auto coll = static_cast<CollId>(work.coll);
  int64_t count = static_cast<int64_t>(work.count);
  if (coll == CollId::kBroadcast || coll == CollId::kAllGather) count *= devTypeSize(work.dtype);
  const int64_t chunkElems = Picker::chunkBytes(*args.comm, work.chunkBytes) / elemSize;
  const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16 / elemSize);
  const DevChannel* channel = &args.comm->channels[blockIdx.x];
  const RingInfo ring{channel->ringRanks, args.comm->nranks, channel->ringIndex, args.comm->rank};
  const bool direct = peers != nullptr && ring.n > 1;
  const bool read = readsPeerSendBuffers(coll);
  if (direct && read) {
    state.directDelta = peers->buff[ring.rankAt(ring.index - 1)] - static_cast<const char*>(work.sendbuff);
  } else if (direct) {
    state.directDelta = peers->buff[ring.rankAt(ring.index + 1)] - static_cast<const char*>(work.recvbuff);
  }
  return RingRun{ring, &work, count, part, chunkElems, hasOps, directFlags(direct, read)};
}

// Any (T, Fn), its step called through a StepFn (which keeps the state in memory).
template <typename Picker>
__device__ __forceinline__ void runWork(const DevKernelArgs& args, ProtoState& state,
                                        const DevRegPeers* peers = nullptr) {
  const DevWork& work = args.work;
  const auto coll = static_cast<CollId>(work.coll);
  Picker picker;
  if (coll == CollId::kBroadcast || coll == CollId::kAllGather) {
    picker.template run<uint8_t, FuncSum<uint8_t>>();  // a copy never reduces
  } else if (!visitTypeOp(work.dtype, work.redOp, picker)) {
    return;  // the host validates the pair; an invalid one runs nothing on any rank
  }
  const StepChoice& c = picker.choice;
  setupRing<Picker>(args, state, c.elemSize, c.hasOps, peers)(Prims{&state, c.fn, c.elemSize});
  finishProtoState(state);
}

// One (T, Fn) with Picker::Steps' step compiled into the ring's code, in a kernel of its own (see
// inlinedPairOf): no call, the state in registers.
template <typename Picker, typename T, typename Fn>
__device__ __forceinline__ void runInlinedWork(const DevKernelArgs& args, ProtoState& state) {
  setupRing<Picker>(args, state, sizeof(T), Fn::kHasPreOp || Fn::kHasPostOp,
                    nullptr)(InlinePrims<typename Picker::Steps, T, Fn>{&state});
  finishProtoState(state);
}

// The ring kernels of the pairs of inlinedPairOf for one protocol (Picker, kProto): one (T, Fn)
// each, its step compiled in, on CTAs of up to kMaxPairRingThreads (128 registers a thread; LL128's
// unrolled lines spilled at the 96 of its generic kernel's 640 threads).
constexpr int kMaxPairRingThreads = 512;

template <typename Picker, int kProto, typename T, typename Fn>
__global__ void __launch_bounds__(kMaxPairRingThreads, 1) pairRingKernel(const DevKernelArgs args) {
  __shared__ PrimsShared shared;
  collectiveKernelStart(args, &shared);
  ProtoState state = makeProtoState(args.comm, &shared, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                                    kProto, workScalar(args.work), args.work.sharedSteps != 0);
  runInlinedWork<Picker, T, Fn>(args, state);
}

template <typename Picker, int kProto>
struct PairRingKernels {
  template <typename T, typename Fn>
  static CollectiveKernel ring() {
    return pairRingKernel<Picker, kProto, T, Fn>;
  }
};

}  // namespace braid
