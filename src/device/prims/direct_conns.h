// What both protocols' direct primitives (prims_direct_ll.h, prims_direct_simple.h) keep of a
// direct channel in shared memory: peer slot k's connection (its FIFO of the protocol, head and
// steps) and the communicator's figures, loaded at the kernel's start and the steps stored back at
// its end. Peer slot k sends to rank + k + 1 and receives from rank - k - 1.
#pragma once

#include <cstdint>

#include "device/prims/prims_common.h"

namespace braid {

struct DirectConns {
  char* out[kMaxDirectPeers];             // peer slot k's FIFO of the protocol (in its memory)
  const char* in[kMaxDirectPeers];        // our FIFO for peer slot k
  const uint64_t* head[kMaxDirectPeers];  // how far peer slot k has consumed our sends (our memory)
  uint64_t* recvHead[kMaxDirectPeers];    // where we return slots to peer slot k (its memory)
  uint64_t sendStep[kMaxDirectPeers];     // at the kernel's start
  uint64_t recvStep[kMaxDirectPeers];     // at the kernel's start
  uint64_t headSeen[kMaxDirectPeers];     // a lower bound of *head[k] (kept for the next kernel)
  const volatile int* abortFlag;
  PrimsShared* prims;
  uint64_t slotBytes;  // of the protocol's FIFO
  uint64_t scalar;
  int rank;
  int nranks;
};

// Called by every thread at the kernel's start, before the barrier that publishes what it loaded:
// thread k (< kMaxDirectPeers) loads peer slot k's connection (every slot exists in DevComm; those
// past nranks - 1 are never used), so the loads take one round trip, not one per peer; thread
// kMaxDirectPeers the communicator's figures.
__device__ __forceinline__ void loadDirectConns(const DevDirectChannel* ch, const DevComm* comm, PrimsShared* prims,
                                                DirectConns* sh, int proto, uint64_t slotBytes, uint64_t scalar,
                                                bool sharedSteps) {
  const int k = static_cast<int>(threadIdx.x);
  if (k < kMaxDirectPeers) {
    const DevSendConn& send = ch->send[k];
    const DevRecvConn& recv = ch->recv[k];
    sh->out[k] = send.buffs[proto];
    sh->head[k] = send.head;
    const SendSteps steps = loadSendSteps(&send, sharedSteps);
    sh->sendStep[k] = steps.step;
    sh->headSeen[k] = steps.headSeen;
    sh->in[k] = recv.buffs[proto];
    sh->recvHead[k] = recv.head;
    sh->recvStep[k] = loadRecvStep(&recv, sharedSteps);
  } else if (k == kMaxDirectPeers) {
    sh->abortFlag = comm->abortFlag;
    sh->prims = prims;
    sh->slotBytes = slotBytes;
    sh->scalar = scalar;
    sh->rank = comm->rank;
    sh->nranks = comm->nranks;
  }
}

// Steps go back to DevComm for the next kernel, `chunks` after those at the start: thread k stores
// peer slot k's. masks: the slots the operation used (every chunk uses the same).
__device__ __forceinline__ void storeDirectSteps(DevDirectChannel* ch, const DirectConns* sh, uint64_t chunks,
                                                 uint32_t usedSend, uint32_t usedRecv, bool sharedSteps) {
  const int k = static_cast<int>(threadIdx.x);
  if (k >= sh->nranks - 1) return;
  if ((usedSend >> k) & 1) {
    storeSendSteps(&ch->send[k], sharedSteps, sh->sendStep[k] + chunks,
                   *reinterpret_cast<const volatile uint64_t*>(&sh->headSeen[k]));
  }
  if ((usedRecv >> k) & 1) storeRecvStep(&ch->recv[k], sharedSteps, sh->recvStep[k] + chunks);
}

}  // namespace braid
