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
// chunks from the same count, so they count the same steps. In place as for the rings: the own
// block is never copied onto itself.
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
    reduce = &llDirectReduce<T, Fn>;
    elemSize = sizeof(T);
  }
};

// The chunk [o, o + len) of the work for this rank. count: per-rank elements for AllGather and
// ReduceScatter, all elements otherwise.
__device__ __forceinline__ DirectChunk directChunk(const DevWork& work, int rank, int n, int64_t count,
                                                   int64_t elemSize, int64_t o, int64_t len) {
  const char* src = static_cast<const char*>(work.sendbuff);
  char* dst = static_cast<char*>(work.recvbuff);
  auto at = [elemSize](auto* p, int64_t elems) { return p + elems * elemSize; };
  auto peerAt = [rank, n](int k, int sign) { return ((rank + sign * (k + 1)) % n + n) % n; };
  DirectChunk c{};
  c.nelem = len;
  switch (static_cast<CollId>(work.coll)) {
    case CollId::kAllReduce:
      for (int k = 0; k < n - 1; k++) c.send[k] = at(src, o);
      c.reduceAll = true;
      c.own = at(src, o);
      c.dst = at(dst, o);
      break;
    case CollId::kReduceScatter:
      for (int k = 0; k < n - 1; k++) c.send[k] = at(src, peerAt(k, 1) * count + o);
      c.reduceAll = true;
      c.own = at(src, rank * count + o);
      c.dst = at(dst, o);
      break;
    case CollId::kAllGather:
      for (int k = 0; k < n - 1; k++) {
        c.send[k] = at(src, o);
        c.recv[k] = at(dst, peerAt(k, -1) * count + o);
      }
      if (src != at(dst, rank * count)) {
        c.copySrc = at(src, o);
        c.copyDst = at(dst, rank * count + o);
      }
      break;
    case CollId::kBroadcast:
      if (rank == work.root) {
        for (int k = 0; k < n - 1; k++) c.send[k] = at(src, o);
        if (src != dst) {
          c.copySrc = at(src, o);
          c.copyDst = at(dst, o);
        }
      } else {
        c.recv[(rank - work.root + n) % n - 1] = at(dst, o);
      }
      break;
    case CollId::kReduce:
      if (rank == work.root) {
        c.reduceAll = true;
        c.own = at(src, o);
        c.dst = at(dst, o);
      } else {
        c.send[(work.root - rank + n) % n - 1] = at(src, o);
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
  DirectState s(args.comm, shared, &direct, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                workScalar(work));
  const int64_t chunkElems = llChunkBytes(*args.comm, work.chunkBytes) / picker.elemSize;
  const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16 / picker.elemSize);
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    llDirectChunk(s, directChunk(work, s.rank, s.nranks, count, picker.elemSize, o, len), picker.elemSize,
                  picker.reduce);
  }
  s.finish();
}

}  // namespace braid
