// Symmetric kernels: the collectives on buffers that lie in NCCL_WIN_COLL_SYMMETRIC windows, where
// each rank loads and stores its peers' buffers themselves (DevWork::sym) instead of staging the
// data in FIFOs. A mode of the Direct/Simple kernel (coll/direct_simple_colls.h): the same CTAs,
// the same reduction functions (rank order, so the same bits on every rank and as Direct/Simple
// gives), and its connections for barriers only (simpleDirectBarrier).
//
// CTA b takes part b of the data and, before and after touching any peer's buffer, a barrier with
// CTA b of every peer:
//   - the first: every peer's kernel has started, so the work before it on its stream (which wrote
//     its send buffer and last read its receive buffer) is done;
//   - the last: every peer's CTA b is done with this rank's part b, so once this kernel ends no
//     peer still loads from its send buffer or stores into its receive buffer.
// Between them (a rank's own buffers are its DevWork::sendbuff / recvbuff; only the peers' come
// from `sym`, and only those a collective names below need be in windows):
//   AllReduce, one hop (peers' send buffers only, so never in place): reduce part b of every
//     rank's send buffer into this rank's receive buffer.
//   AllReduce, two hops (peers' send and receive buffers; in place too): reduce part b of block
//     `rank` (blocks of ceil(count / n), 16-byte multiples) from every rank's send buffer into this
//     rank's receive buffer and, in the same pass, into every peer's receive buffer. Block `rank` of
//     a peer's buffers is touched by this rank only, and each element is read before the same thread
//     writes it, so a peer's send buffer may be its receive buffer.
//   ReduceScatter (peers' send buffers): reduce part b of block `rank` of every send buffer into
//     this rank's receive buffer.
//   Reduce (peers' send buffers): the root reduces part b of every send buffer into its receive
//     buffer; the others take the barriers only.
//   AllGather (peers' receive buffers): store part b of the send buffer into block `rank` of every
//     rank's receive buffer, loading it once for all of them.
//   Broadcast (peers' receive buffers): the root copies its send buffer into its receive buffer
//     before the first barrier; every other rank then loads part b of the root's receive buffer
//     into its own.
#pragma once

#include <cstdint>

#include "device/coll/ring_colls.h"
#include "device/prims/prims_direct_simple.h"

namespace braid {

// Rank q's byte `offset` of the send buffer: this rank's own, or a peer's copy.
__device__ __forceinline__ const char* symmetricSend(const DevWork& work, int rank, int q, int64_t offset) {
  if (q == rank) return static_cast<const char*>(work.sendbuff) + offset;
  return work.sym.send + work.sym.sendStride * q + offset;
}
__device__ __forceinline__ char* symmetricRecv(const DevWork& work, int rank, int q, int64_t offset) {
  if (q == rank) return static_cast<char*>(work.recvbuff) + offset;
  return work.sym.recv + work.sym.recvStride * q + offset;
}

// Reduces nelem elements at byte `sendOffset` of every rank's send buffer (in rank order) into dst
// and, where peersOffset >= 0, in the same pass into byte peersOffset of every peer's receive buffer.
__device__ __forceinline__ void symmetricReduce(DirectSimpleState& s, const DevWork& work, DirectSimpleReduceFn reduce,
                                                int64_t sendOffset, char* dst, int64_t peersOffset, int64_t nelem) {
  const int q = s.tid;
  const int nCopies = peersOffset >= 0 ? s.nranks - 1 : 0;
  if (q < s.nranks) s.sh->source[q] = symmetricSend(work, s.rank, q, sendOffset);
  if (q < nCopies) s.sh->copyTo[q] = symmetricRecv(work, s.rank, s.sendPeer(q), peersOffset);
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  reduce(s.sh, s.chunk, dst, nCopies, nelem);
}

__device__ __forceinline__ void symmetricCopy(const DirectSimpleState& s, const char* src, char* dst, int64_t bytes) {
  if (src != dst && bytes > 0) directSimpleCopy<1>(s, nullptr, src, dst, nullptr, bytes);
}

// Copies `bytes` from src to own (unless null) and to byte `offset` of every peer's receive buffer,
// in one pass that loads src once: 16-byte packs, kSimpleUnroll of them in flight per thread, where
// every pointer allows; else one copy per destination. Each rank starts with the rank after it
// (sendPeer), so that the ranks' stores spread over the peers.
__device__ __forceinline__ void symmetricCopyToAll(DirectSimpleState& s, const DevWork& work, const char* src,
                                                   char* own, int64_t offset, int64_t bytes) {
  const int nPeers = s.nranks - 1;
  if (s.tid < nPeers) s.sh->copyTo[s.tid] = symmetricRecv(work, s.rank, s.sendPeer(s.tid), offset);
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  char* const* peers = s.sh->copyTo;
  uintptr_t bits = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(own);
  for (int k = 0; k < nPeers; k++) bits |= reinterpret_cast<uintptr_t>(peers[k]);
  if (bits % 16 != 0) {
    if (own != nullptr) symmetricCopy(s, src, own, bytes);
    for (int k = 0; k < nPeers; k++) symmetricCopy(s, src, peers[k], bytes);
    return;
  }
  constexpr int kU = kSimpleUnroll;
  const int64_t nPacks = bytes / 16;
  const uint4* in = reinterpret_cast<const uint4*>(src);
  for (int64_t base = s.tid; base < nPacks; base += static_cast<int64_t>(kU) * s.nthreads) {
    uint4 v[kU];
#pragma unroll
    for (int u = 0; u < kU; u++) {
      const int64_t i = base + static_cast<int64_t>(u) * s.nthreads;
      if (i < nPacks) v[u] = ldGlobal16(in + i);
    }
#pragma unroll
    for (int u = 0; u < kU; u++) {
      const int64_t i = base + static_cast<int64_t>(u) * s.nthreads;
      if (i >= nPacks) break;
      if (own != nullptr) stGlobal16(reinterpret_cast<uint4*>(own) + i, v[u]);
      for (int k = 0; k < nPeers; k++) stGlobal16(reinterpret_cast<uint4*>(peers[k]) + i, v[u]);
    }
  }
  for (int64_t i = nPacks * 16 + s.tid; i < bytes; i += s.nthreads) {  // a part's last bytes
    const char b = src[i];
    if (own != nullptr) own[i] = b;
    for (int k = 0; k < nPeers; k++) peers[k][i] = b;
  }
}

// The part of the operation between the barriers (see the header comment).
__device__ __forceinline__ void symmetricMoves(const DevWork& work, DirectSimpleState& s, DirectSimpleReduceFn reduce,
                                               int64_t es, int64_t count) {
  const auto coll = static_cast<CollId>(work.coll);
  const int n = s.nranks;
  const int64_t grain = 16 / es;
  char* ownRecv = static_cast<char*>(work.recvbuff);
  if (coll == CollId::kAllReduce && work.twoShot != 0) {
    const int64_t block = roundUp(divUp(count, n), grain);
    const int64_t blockBegin = minI64(block * s.rank, count);
    const ChannelPart part = channelPart(minI64(block, count - blockBegin), blockIdx.x, work.nChannels, grain);
    const int64_t offset = (blockBegin + part.begin) * es;
    if (part.end == part.begin) return;
    symmetricReduce(s, work, reduce, offset, ownRecv + offset, offset, part.end - part.begin);
  } else if (coll == CollId::kAllReduce || coll == CollId::kReduceScatter || coll == CollId::kReduce) {
    if (coll == CollId::kReduce && s.rank != work.root) return;
    const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, grain);
    const int64_t recvOffset = part.begin * es;
    const int64_t sendOffset = (coll == CollId::kReduceScatter ? count * s.rank * es : 0) + recvOffset;
    if (part.end > part.begin)
      symmetricReduce(s, work, reduce, sendOffset, ownRecv + recvOffset, -1, part.end - part.begin);
  } else if (coll == CollId::kAllGather) {
    const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16);
    const char* src = static_cast<const char*>(work.sendbuff) + part.begin;
    const int64_t offset = count * s.rank + part.begin;
    char* own = ownRecv + offset;
    symmetricCopyToAll(s, work, src, own == src ? nullptr : own, offset, part.end - part.begin);
  } else if (coll == CollId::kBroadcast && s.rank != work.root) {
    const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16);
    symmetricCopy(s, symmetricRecv(work, s.rank, work.root, part.begin), ownRecv + part.begin, part.end - part.begin);
  }
}

// The whole work of this CTA on symmetric buffers. `reduce` and `es`: the (T, Fn)'s reduction and
// element size (a copy: bytes, es 1); count in those elements.
__device__ __forceinline__ void runSymmetricWork(const DevWork& work, DirectSimpleState& s, DirectSimpleReduceFn reduce,
                                                 int64_t es, int64_t count) {
  if (static_cast<CollId>(work.coll) == CollId::kBroadcast && s.rank == work.root) {
    const ChannelPart part = channelPart(count, blockIdx.x, work.nChannels, 16);
    symmetricCopy(s, static_cast<const char*>(work.sendbuff) + part.begin,
                  static_cast<char*>(work.recvbuff) + part.begin, part.end - part.begin);
    namedBarrierSync(kSimpleBarrier, s.nthreads);
  }
  simpleDirectBarrier(s);
  if (!s.abort.aborted()) symmetricMoves(work, s, reduce, es, count);
  namedBarrierSync(kSimpleBarrier, s.nthreads);
  simpleDirectBarrier(s);
}

}  // namespace braid
