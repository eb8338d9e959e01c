// One chunk of a direct operation, as the direct algorithms (coll/direct_colls.h) hand it to either
// protocol's direct primitives (prims_direct_ll.h, prims_direct_simple.h). Peer slot k sends to
// rank + k + 1 and receives from rank - k - 1 (directSendPeer, directRecvPeer).
#pragma once

#include <cstdint>

namespace braid {

// nelem elements of the step's T. Peer slot k's data is at send + sendStride * sendPeer(k) (sends,
// for the slots of sendMask) and goes to recv + recvStride * recvPeer(k) (copy form, the slots of
// recvMask); a stride of 0 means every peer shares the buffer.
//
// Blocked chunks (the two-shot AllReduce, Simple only): the operation's blockCount elements are
// blocks of blockElems, rank q owning block q (the last blocks may be short or empty), and the
// chunk is [blockOffset, blockOffset + nelem) of each block, so rank q's share is what of that lies
// inside block q (shareOf). A send to rank q carries q's share when sendsPeerBlock (else this
// rank's); a receive from rank q carries q's share when recvsPeerBlock (else this rank's). With
// blockElems 0 every share is nelem.
struct DirectChunk {
  int64_t nelem;
  const char* send;
  int64_t sendStride;
  char* recv;
  int64_t recvStride;
  uint32_t sendMask;
  uint32_t recvMask;
  bool reduceAll;       // reduce form: receive from every peer and reduce with own
  const char* own;      // reduce form: this rank's input
  char* dst;            // reduce form: the result
  const char* copySrc;  // copy form: a local copy that runs with the receives
  char* copyDst;
  int64_t blockElems;
  int64_t blockCount;
  int64_t blockOffset;
  bool sendsPeerBlock;
  bool recvsPeerBlock;
};

// The rank peer slot k sends to, and the one it receives from, on `n` ranks.
__device__ __forceinline__ int directSendPeer(int rank, int n, int k) {
  const int r = rank + k + 1;
  return r >= n ? r - n : r;
}
__device__ __forceinline__ int directRecvPeer(int rank, int n, int k) {
  const int r = rank - k - 1;
  return r < 0 ? r + n : r;
}

// Rank q's share of a chunk, in elements (see DirectChunk).
__device__ __forceinline__ int64_t shareOf(const DirectChunk& c, int q) {
  if (c.blockElems == 0) return c.nelem;
  int64_t inBlock = c.blockCount - q * c.blockElems;
  if (inBlock > c.blockElems) inBlock = c.blockElems;
  const int64_t share = inBlock - c.blockOffset;
  return share < 0 ? 0 : (share < c.nelem ? share : c.nelem);
}

}  // namespace braid
