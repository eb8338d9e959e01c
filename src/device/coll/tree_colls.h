// Tree AllReduce (DevAlgo::kTree) on one CTA's tree channel (DevTreeChannel), with the LL or
// Simple step functions the rings use: each step moves data over one connection to and/or from one
// tree neighbour, and the CTA switches connections between steps (TreeConns keeps every
// connection's step counters; Simple publishes its steps from worker 0, ProtoState::postInline).
//
// Two phases over the CTA's part of the data, chunk by chunk:
//   up:   a rank adds its children's partial sums (one child per step, the first together with its
//         own input) and sends the result to its parent; the root's last addition gives the result.
//   down: a rank receives the result from its parent into dst and passes it to each child.
// The up phase finishes before the down phase starts, on every rank: a rank's down traffic waits
// for its parent's whole up phase, so no FIFO can fill while its reader still works on the other
// direction (a rank that interleaved the phases could hold its parent's next partial sum hostage
// behind a full down FIFO). Partial sums of a rank with several children stay in dst between
// steps, which also makes in-place operations safe: src is read before dst is written, by the
// same thread.
// Latency: 2 x (tree depth) hops instead of the ring's 2 x (nranks - 1), which is what matters
// across hosts; the ring keeps large sizes (plan/plan.cc).
#pragma once

#include <cstdint>

#include "device/coll/run_work.h"
#include "device/dev_types.h"
#include "device/prims/prims_common.h"

namespace braid {

struct TreeSend {
  DevSendConn* conn;
  uint64_t step;
  uint64_t headSeen;
};

struct TreeRecv {
  DevRecvConn* conn;
  uint64_t step;
};

// One thread's view of its tree channel's connections, counters included.
struct TreeConns {
  int nChildren;
  bool hasParent;
  TreeSend toParent;
  TreeRecv fromParent;
  TreeSend toChild[kMaxTreeChildren];
  TreeRecv fromChild[kMaxTreeChildren];

  __device__ explicit TreeConns(DevTreeChannel* t) : nChildren(t->nChildren), hasParent(t->parent >= 0) {
    toParent = TreeSend{&t->toParent, t->toParent.step, t->toParent.headSeen};
    fromParent = TreeRecv{&t->fromParent, t->fromParent.step};
    for (int k = 0; k < kMaxTreeChildren; k++) {
      toChild[k] = TreeSend{&t->toChild[k], t->toChild[k].step, t->toChild[k].headSeen};
      fromChild[k] = TreeRecv{&t->fromChild[k], t->fromChild[k].step};
    }
  }

  // The counters go back to DevComm for the next kernel (every thread counted the same steps).
  __device__ void writeBack(int tid) const {
    if (tid != 0) return;
    auto sendBack = [](const TreeSend& s) {
      s.conn->step = s.step;
      s.conn->headSeen = s.headSeen;
    };
    if (hasParent) {
      sendBack(toParent);
      fromParent.conn->step = fromParent.step;
    }
    for (int k = 0; k < nChildren; k++) {
      sendBack(toChild[k]);
      fromChild[k].conn->step = fromChild[k].step;
    }
  }
};

// One step sending to `to` and/or receiving from `from` (either may be null).
__device__ __forceinline__ void treeStep(const Prims& prims, int proto, TreeSend* to, TreeRecv* from, const char* src,
                                         char* dst, int64_t nelem, int flags) {
  ProtoState& s = *prims.state;
  s.sendConn = to != nullptr ? to->conn : nullptr;
  s.sendBuff = to != nullptr ? to->conn->buffs[proto] : nullptr;
  s.sendHead = to != nullptr ? to->conn->head : nullptr;
  s.sendSizes = to != nullptr ? to->conn->sizes : nullptr;
  s.sendStep = to != nullptr ? to->step : 0;
  s.headCache = to != nullptr ? to->headSeen : 0;
  s.recvConn = from != nullptr ? from->conn : nullptr;
  s.recvBuff = from != nullptr ? from->conn->buffs[proto] : nullptr;
  s.recvHead = from != nullptr ? from->conn->head : nullptr;
  s.recvTail = from != nullptr ? from->conn->tail : nullptr;
  s.recvStep = from != nullptr ? from->step : 0;
  prims.step(src, dst, nelem, flags | (to != nullptr ? kStepSend : 0) | (from != nullptr ? kStepRecv : 0));
  if (to != nullptr) {
    to->step = s.sendStep;
    to->headSeen = s.headCache;
  }
  if (from != nullptr) from->step = s.recvStep;
}

__device__ inline void treeAllReduce(const Prims& prims, int proto, TreeConns& t, const char* src, char* dst,
                                     ChannelPart part, int64_t chunkElems) {
  const int k = t.nChildren;
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    const char* in = prims.at(src, o);
    char* out = prims.at(dst, o);
    if (k == 0) {
      treeStep(prims, proto, &t.toParent, nullptr, in, nullptr, len, kStepPreOp);
      continue;
    }
    for (int j = 0; j < k; j++) {
      const bool last = j == k - 1;
      const char* partial = j == 0 ? in : out;
      const int pre = j == 0 ? kStepPreOp : 0;
      if (last && t.hasParent) {
        treeStep(prims, proto, &t.toParent, &t.fromChild[j], partial, nullptr, len, pre);
      } else {
        treeStep(prims, proto, nullptr, &t.fromChild[j], partial, out, len, pre | (last ? kStepPostOp : 0));
      }
    }
  }
  for (int64_t o = part.begin; o < part.end; o += chunkElems) {
    const int64_t len = minI64(chunkElems, part.end - o);
    char* out = prims.at(dst, o);
    TreeSend* first = k > 0 ? &t.toChild[0] : nullptr;
    if (t.hasParent) {
      treeStep(prims, proto, first, &t.fromParent, nullptr, out, len, 0);
    } else if (first != nullptr) {
      treeStep(prims, proto, first, nullptr, out, nullptr, len, 0);
    }
    for (int j = 1; j < k; j++) treeStep(prims, proto, &t.toChild[j], nullptr, out, nullptr, len, 0);
  }
}

// The tree counterpart of runWork (run_work.h): AllReduce only, on comm->tree[blockIdx.x].
template <typename Picker>
__device__ __forceinline__ void runTreeWork(const DevKernelArgs& args, PrimsShared* shared, int proto, int tid,
                                            int nthreads) {
  const DevWork& work = args.work;
  DevComm* comm = args.comm;
  Picker picker;
  if (static_cast<CollId>(work.coll) != CollId::kAllReduce || !visitTypeOp(work.dtype, work.redOp, picker)) return;
  const StepChoice& c = picker.choice;
  ProtoState state = makeConnState(nullptr, nullptr, comm->abortFlag, shared, tid, nthreads, proto,
                                   comm->slotBytes[proto], workScalar(work), false);  // trees keep their own steps
  state.postInline = true;
  const Prims prims{&state, c.fn, c.elemSize};
  const int64_t chunkElems = Picker::chunkBytes(*comm, work.chunkBytes) / c.elemSize;
  const ChannelPart part = channelPart(static_cast<int64_t>(work.count), blockIdx.x, work.nChannels, 16 / c.elemSize);
  TreeConns conns(&comm->tree[blockIdx.x]);
  treeAllReduce(prims, proto, conns, static_cast<const char*>(work.sendbuff), static_cast<char*>(work.recvbuff), part,
                chunkElems);
  conns.writeBack(tid);
}

}  // namespace braid
