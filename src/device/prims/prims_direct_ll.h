// Direct algorithms on the LL protocol: a CTA writes its part of the data straight into each peer's
// FIFO and reads each peer's part from its own, so every collective takes one hop whatever the rank
// count (one-shot). The connections are DevDirectChannel's; the line format, flags and
// flow control are LL's (prims_ll.h), per connection: a sender fills step s once
// head + kFifoSlotsLL > s, and a receiver returns its slot once every thread has read its lines.
//
// Latency is the point of this path (it runs the small operations), and on one CTA a chain of
// dependent memory round trips is what costs: every global load is ~0.5 us. So the peers are worked
// on at once, never one after another:
//   - the connection state is read once per kernel, one peer per thread, into shared memory;
//   - sends and receives are items (peer slot, line), peer-major, spread over all threads, so that
//     the polls of different peers are in flight together;
//   - a reduction stages what it received in shared memory and then reduces each line in rank
//     order, pre(x_0) op pre(x_1) op ... then post(): all ranks of an AllReduce get bit-identical
//     results, whatever the type.
// Every chunk of an operation talks to the same peers, so chunk j uses step + j on each connection
// it uses; the steps in shared memory stay those of the kernel's start until finish() stores them.
//
// Nothing here may live in local memory: a struct that a thread builds in its stack at kernel start
// costs ~0.8 us before its first use (H200: a 140-byte struct passed by reference to a non-inlined
// function, against 0.16 us for two dependent L2 loads), and this path's operations take ~7 us. So
// the per-kernel state is in registers (DirectState) and shared memory (DirectShared), a chunk
// names its peers' buffers by a base and a per-peer stride instead of arrays indexed by peer, and
// the one call that is not inlined (the reduction, one copy per (T, Fn)) takes scalars.
//
// In place: every thread finishes its sends before it polls, and the reduction writes only after
// the barrier that follows the polls, so no input line is overwritten before it was sent.
//
// Peers on other hosts (NET connections, DevDirectChannel::netSendMask): the lines go to this
// rank's host FIFO, and the proxy ships a step once its size word says LL and the lines carry their
// flags (llAnnounceNetStep): before the sends, thread k stores peer slot k's step size once the
// slot is free. Receives from them need nothing new: the receiving proxy writes the lines into the
// LL FIFO, whose flags the threads poll as for a P2P peer, and the head goes to host memory that
// the proxy reads.
#pragma once

#include <cstdint>

#include "device/prims/direct_chunk.h"
#include "device/prims/direct_conns.h"
#include "device/prims/prims_ll.h"

namespace braid {

// Lines of a reduction round, all peers' together, staged in shared memory (16 KiB).
constexpr int kDirectStageLines = 2048;

// What every thread of the CTA uses, the same for the whole kernel: the direct channel as this
// kernel sees it (DirectConns, the LL FIFOs), the NET peers' step sizes, and the reduction stage.
struct DirectShared : DirectConns {
  uint32_t* netSizes[kMaxDirectPeers];  // NET peer slot k: the step sizes for the proxy (else null)
  uint32_t netSendMask;                 // DevDirectChannel::netSendMask
  uint64_t stage[kDirectStageLines];
};

// One CTA thread's view of its direct channel, in registers. Peer slot k (0..nranks-2) is peer
// offset k + 1: sends go to rank + k + 1, receives come from rank - k - 1.
struct DirectState {
  DirectShared* sh;
  AbortWatch abort;
  int tid;
  int nthreads;
  int rank;
  int nranks;
  uint64_t slotBytes;
  uint64_t chunk;     // chunks of the operation done so far
  uint32_t recvMask;  // peer slots the chunk receives from (bit k)

  // From what load() left in shared memory.
  __device__ DirectState(DirectShared* direct, uint64_t chunkIndex)
      : sh(direct),
        abort(direct->abortFlag, direct->prims),
        tid(static_cast<int>(threadIdx.x)),
        nthreads(static_cast<int>(blockDim.x)),
        rank(direct->rank),
        nranks(direct->nranks),
        slotBytes(direct->slotBytes),
        chunk(chunkIndex),
        recvMask(0) {}

  // Called by every thread at the kernel's start.
  static __device__ void load(const DevDirectChannel* ch, const DevComm* comm, PrimsShared* prims, DirectShared* sh,
                              uint64_t scalar, bool sharedSteps) {
    loadDirectConns(ch, comm, prims, sh, kProtoLL, comm->slotBytes[kProtoLL], scalar, sharedSteps);
    const int k = static_cast<int>(threadIdx.x);
    if (k < kMaxDirectPeers) sh->netSizes[k] = ch->send[k].sizes;
    if (k == kMaxDirectPeers) sh->netSendMask = ch->netSendMask;
    namedBarrierSync(kLLBarrier, static_cast<int>(blockDim.x));
  }

  __device__ void finish(DevDirectChannel* ch, uint32_t usedSend, uint32_t usedRecv, bool sharedSteps) const {
    storeDirectSteps(ch, sh, chunk, usedSend, usedRecv, sharedSteps);
  }

  // The rank of peer slot k's receiver (sends) and sender (receives).
  __device__ int sendPeer(int k) const { return directSendPeer(rank, nranks, k); }
  __device__ int recvPeer(int k) const { return directRecvPeer(rank, nranks, k); }
};

// Waits until peer slot k's FIFO has room for `step`. headSeen is shared: whichever thread read
// head last leaves a lower bound of it there, which is all the others need.
__device__ __forceinline__ void directWaitCredit(DirectState& s, int k, uint64_t step) {
  volatile uint64_t* seen = &s.sh->headSeen[k];
  uint64_t head = *seen;
  if (head + kFifoSlotsLL > step) return;
  do {
    head = ldVolatile64(s.sh->head[k]);
  } while (head + kFifoSlotsLL <= step && !s.abort.poll());
  *seen = head;
}

// Item i of a phase over `lines` lines of every peer slot: peer slot i / lines, line i % lines.
struct DirectItem {
  int k;
  int line;
};
__device__ __forceinline__ DirectItem directItem(int i, int lines) { return {i / lines, i % lines}; }

// Every send of the chunk: items over (peer slot, line); a source shared by several peers is
// re-read from L1.
template <typename T>
__device__ __forceinline__ void directSends(DirectState& s, const DirectChunk& c, int64_t nbytes, int nlines) {
  if (c.sendMask == 0) return;
  const int items = (s.nranks - 1) * nlines;
  for (int base = s.tid; base < items; base += kLLUnroll * s.nthreads) {
    uint64_t v[kLLUnroll];
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      const int i = base + u * s.nthreads;
      const DirectItem it = directItem(i, nlines);
      v[u] = 0;
      if (i < items && ((c.sendMask >> it.k) & 1)) {
        const char* src = c.send + c.sendStride * s.sendPeer(it.k);
        v[u] = loadPack8<T>(src + 8 * it.line, llLineBytes(nbytes, it.line), aligned8(src));
      }
    }
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      const int i = base + u * s.nthreads;
      const DirectItem it = directItem(i, nlines);
      if (i >= items || ((c.sendMask >> it.k) & 1) == 0) continue;
      const uint64_t step = s.sh->sendStep[it.k] + s.chunk;
      directWaitCredit(s, it.k, step);
      char* out = s.sh->out[it.k] + (step % kFifoSlotsLL) * s.slotBytes;
      llSendLine(out + 16 * it.line, v[u], static_cast<uint32_t>(step + 1));
    }
  }
}

// The chunk's steps to NET peers, announced to their proxies (see the header comment): thread k
// for peer slot k, once the slot is free. Nothing when every peer the chunk sends to is P2P.
__device__ __forceinline__ void directAnnounceNet(DirectState& s, uint32_t sendMask, int nlines) {
  const int k = s.tid;
  if (k >= s.nranks - 1 || (((sendMask & s.sh->netSendMask) >> k) & 1) == 0) return;
  const uint64_t step = s.sh->sendStep[k] + s.chunk;
  directWaitCredit(s, k, step);
  if (s.abort.aborted()) return;
  storeNetLlSize(s.sh->netSizes[k], step, nlines);
}

// Receives items base, base + nthreads, ... (kLLUnroll of them) of a phase over lines
// [first, first + lines) of every peer slot of recvMask; items past `items` or of other slots read
// as 0 (and `active` says which were received). The loads are issued together, then each is
// polled until its flags match.
__device__ __forceinline__ void directPoll(DirectState& s, int base, int items, int lines, int first,
                                           uint64_t (&v)[kLLUnroll], bool (&active)[kLLUnroll]) {
  const char* at[kLLUnroll];
  uint32_t flag[kLLUnroll];
  uint4 raw[kLLUnroll];
#pragma unroll
  for (int u = 0; u < kLLUnroll; u++) {
    const int i = base + u * s.nthreads;
    const DirectItem it = directItem(i, lines);
    active[u] = i < items && ((s.recvMask >> it.k) & 1);
    at[u] = nullptr;
    flag[u] = 0;
    raw[u] = uint4{0, 0, 0, 0};
    if (!active[u]) continue;
    const uint64_t step = s.sh->recvStep[it.k] + s.chunk;
    at[u] = s.sh->in[it.k] + (step % kFifoSlotsLL) * s.slotBytes + 16 * (first + it.line);
    flag[u] = static_cast<uint32_t>(step + 1);
    raw[u] = ldVolatile16(at[u]);
  }
#pragma unroll
  for (int u = 0; u < kLLUnroll; u++) {
    while (active[u] && (raw[u].y != flag[u] || raw[u].w != flag[u])) {
      if (s.abort.poll()) {
        raw[u] = uint4{0, flag[u], 0, flag[u]};
        break;
      }
      raw[u] = ldVolatile16(at[u]);
    }
    v[u] = static_cast<uint64_t>(raw[u].x) | (static_cast<uint64_t>(raw[u].z) << 32);
  }
}

// The reduction's lines [first, first + lines) of every peer, polled from the FIFOs into the
// shared stage (peer slot k's line first + r at (k * lines + r)).
__device__ __forceinline__ void directStageRound(DirectState& s, int first, int lines) {
  const int items = (s.nranks - 1) * lines;
  uint64_t* stage = s.sh->stage;
  for (int base = s.tid; base < items; base += kLLUnroll * s.nthreads) {
    uint64_t v[kLLUnroll];
    bool active[kLLUnroll];
    directPoll(s, base, items, lines, first, v, active);
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      if (active[u]) stage[base + u * s.nthreads] = v[u];
    }
  }
  namedBarrierSync(kLLBarrier, s.nthreads);
}

// dst = post(pre(x_0) op pre(x_1) op ... op pre(x_{n-1})) over lines [first, first + lines), x_rank
// = own, the others from the stage (directStageRound). The one part of the reduction that depends
// on (T, Fn): not inlined, one copy per pair, its state rebuilt from shared memory.
template <typename T, typename Fn>
__device__ __noinline__ void llDirectReduceRound(DirectShared* sh, const char* own, char* dst, int64_t nbytes,
                                                 int first, int lines) {
  const DirectState s(sh, 0);
  const Fn fn(sh->scalar);
  const int n = s.nranks;
  const bool ownAligned = aligned8(own);
  const bool dstAligned = aligned8(dst);
  const uint64_t* stage = sh->stage;
  for (int base = s.tid; base < lines; base += kLLUnroll * s.nthreads) {
    uint64_t acc[kLLUnroll];
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      const int r = base + u * s.nthreads;
      const int l = first + r;
      acc[u] = r < lines ? loadPack8<T>(own + 8 * l, llLineBytes(nbytes, l), ownAligned) : 0;
    }
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      const int r = base + u * s.nthreads;
      if (r >= lines) break;
      const uint64_t mine = acc[u];
      for (int q = 0; q < n; q++) {
        uint64_t x = q == s.rank ? mine : stage[((s.rank - q + n) % n - 1) * lines + r];
        if (Fn::kHasPreOp) x = applyPreOp<Fn, T, uint64_t>(fn, x);
        acc[u] = q == 0 ? x : applyReduce<Fn, T, uint64_t>(fn, acc[u], x);
      }
      if (Fn::kHasPostOp) acc[u] = applyPostOp<Fn, T, uint64_t>(fn, acc[u]);
      const int l = first + r;
      storePack8<T>(dst + 8 * l, acc[u], llLineBytes(nbytes, l), dstAligned);
    }
  }
}

using DirectReduceFn = void (*)(DirectShared*, const char* own, char* dst, int64_t nbytes, int first, int lines);

// dst = the reduction of own and the peers' lines from the FIFOs, in rounds of kDirectStageLines
// lines of all peers together; `reduce` is the (T, Fn) one.
__device__ __forceinline__ void directReduceAll(DirectState& s, DirectReduceFn reduce, const char* own, char* dst,
                                                int64_t nbytes, int nlines) {
  const int roundLines = kDirectStageLines / (s.nranks - 1);
  for (int first = 0; first < nlines; first += roundLines) {
    const int lines = min(roundLines, nlines - first);
    directStageRound(s, first, lines);
    reduce(s.sh, own, dst, nbytes, first, lines);
    if (first + lines < nlines) namedBarrierSync(kLLBarrier, s.nthreads);  // the stage is refilled
  }
}

// Each peer's lines to its own destination (items over (peer slot, line)), and the local copy.
template <typename T>
__device__ __forceinline__ void directCopies(DirectState& s, const DirectChunk& c, int64_t nbytes, int nlines) {
  const int items = (s.nranks - 1) * nlines;
  for (int base = s.tid; s.recvMask != 0 && base < items; base += kLLUnroll * s.nthreads) {
    uint64_t v[kLLUnroll];
    bool active[kLLUnroll];
    directPoll(s, base, items, nlines, 0, v, active);
#pragma unroll
    for (int u = 0; u < kLLUnroll; u++) {
      if (!active[u]) continue;
      const DirectItem it = directItem(base + u * s.nthreads, nlines);
      char* dst = c.recv + c.recvStride * s.recvPeer(it.k);
      storePack8<T>(dst + 8 * it.line, v[u], llLineBytes(nbytes, it.line), aligned8(dst));
    }
  }
  if (c.copySrc == nullptr) return;
  const bool srcAligned = aligned8(c.copySrc);
  const bool dstAligned = aligned8(c.copyDst);
  for (int l = s.tid; l < nlines; l += s.nthreads) {
    const int lineBytes = llLineBytes(nbytes, l);
    storePack8<T>(c.copyDst + 8 * l, loadPack8<T>(c.copySrc + 8 * l, lineBytes, srcAligned), lineBytes, dstAligned);
  }
}

// After the receives: every thread has read its lines, then thread k returns peer slot k's slot.
__device__ __forceinline__ void directPostHeads(DirectState& s) {
  if (s.recvMask == 0) return;
  namedBarrierSync(kLLBarrier, s.nthreads);
  const int k = s.tid;
  if (k < s.nranks - 1 && ((s.recvMask >> k) & 1) && !s.abort.aborted()) {
    stRelaxedSys(s.sh->recvHead[k], s.sh->recvStep[k] + s.chunk + 1);
  }
}

// The reduce form's receives for one (T, Fn). Not inlined: one copy per (T, Fn); the sends and
// copies move bits and are inlined once per element size. Its arguments are scalars and its state
// is rebuilt from shared memory, so that no caller state goes to local memory.
template <int kBytes>
__device__ __forceinline__ void llDirectMove(DirectState& s, const DirectChunk& c, int64_t nbytes, int nlines) {
  using U = typename UintOfSize<kBytes>::Type;
  directAnnounceNet(s, c.sendMask, nlines);
  directSends<U>(s, c, nbytes, nlines);
  if (!c.reduceAll) directCopies<U>(s, c, nbytes, nlines);
}

// One chunk (at most the LL slot's payload): sends, then the receives (reduce: `reduce`, the
// (T, Fn) one), then the slots go back.
__device__ __forceinline__ void llDirectChunk(DirectState& s, const DirectChunk& c, int64_t elemSize,
                                              DirectReduceFn reduce) {
  if (c.nelem <= 0) return;
  s.recvMask = c.recvMask;
  const int64_t nbytes = c.nelem * elemSize;
  const int nlines = static_cast<int>(divUp(nbytes, 8));
  switch (elemSize) {
    case 1:
      llDirectMove<1>(s, c, nbytes, nlines);
      break;
    case 2:
      llDirectMove<2>(s, c, nbytes, nlines);
      break;
    case 4:
      llDirectMove<4>(s, c, nbytes, nlines);
      break;
    default:
      llDirectMove<8>(s, c, nbytes, nlines);
      break;
  }
  if (c.reduceAll && s.recvMask != 0) directReduceAll(s, reduce, c.own, c.dst, nbytes, nlines);
  directPostHeads(s);
  s.chunk++;
}

}  // namespace braid
