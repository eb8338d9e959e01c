// Zero-copy sends and receives. A send of the zero-copy size (p2pZeroCopySize) to a peer linked by
// P2P goes straight into the peer's receive buffer when that buffer is registered (ncclCommRegister,
// or graph registration while the receive is captured) and the sender could map it; the receiver
// then copies nothing. The two ranks of each pair meet in ncclGroupEnd's connect phase
// (PeerRegistrations::exchangePairs) when one of their operations of that size with each other may
// be zero-copy: on this rank, its own buffer is registered, or it is captured with graph
// registration on, or both ranks held registrations when they last met. Each side decides from its
// own buffer, as collectives do, so the pair agrees whenever it keeps NCCL's rule (a send and its
// receive pass registered buffers both or neither); a pair that has met holding registrations on
// both sides keeps meeting, so from then on a receive into an unregistered buffer is simply the copy
// path. Deciding from "this rank holds any registration" instead left a rank that registered nothing
// unseen by a peer that registered an unrelated buffer: the peer waited for it until
// NCCL_BOOTSTRAP_TIMEOUT although neither buffer of their transfer was registered.
#include <map>
#include <vector>

#include "core/comm.h"
#include "launch/buffer_registration.h"
#include "launch/collective_engine.h"
#include "launch/p2p_engine.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {

// Both ranks of a pair see the same sizes (and, as with collectives, both capture or neither), so
// they count the same operations.
bool BufferRegistration::p2pZeroCopySize(const P2pTask& task) const {
  return task.peer != ctx_.comm->rank_ && p2p_.directPair(task.peer) && zeroCopySize(task.bytes, task.stream);
}

bool BufferRegistration::p2pMeetsPeer(const P2pTask& task) const {
  if (!p2pZeroCopySize(task)) return false;
  if (peerRegs_.pairHoldsRegistrations(task.peer) || graphRegisters(task.bytes, task.stream)) return true;
  return paramInt(ParamId::kLocalRegister) != 0 && registry_.find(task.buff, task.bytes) != nullptr;
}

bool BufferRegistration::needsP2pExchange(const std::vector<P2pTask>& queue) const {
  for (const P2pTask& task : queue) {
    // A peer not connected yet may turn out to be a P2P pair: the connect phase looks again.
    const bool unknownPair = !p2p_.connectedTo(task.peer);
    if (unknownPair ? task.peer != ctx_.comm->rank_ && task.bytes >= kZeroCopyMinBytes : p2pMeetsPeer(task))
      return true;
  }
  return false;
}

ncclResult_t BufferRegistration::exchangeP2p(std::vector<P2pTask>* queue) {
  std::map<int, size_t> pairOf;  // the peers this rank meets -> their place in `pairs`
  for (const P2pTask& task : *queue) {
    if (p2pMeetsPeer(task)) pairOf.emplace(task.peer, 0);
  }
  if (pairOf.empty()) return ncclSuccess;
  std::vector<PeerRegistrations::Pair> pairs;
  for (auto& [peer, index] : pairOf) {
    index = pairs.size();
    pairs.push_back(PeerRegistrations::Pair{peer, {}, 0, {}, {}});
  }
  collectReleased();
  // The operations both ranks of a met pair count, in issue order (asked once: it may query capture).
  std::vector<P2pTask*> counted;
  for (P2pTask& task : *queue) {
    if (pairOf.count(task.peer) != 0 && p2pZeroCopySize(task)) counted.push_back(&task);
  }
  const bool local = paramInt(ParamId::kLocalRegister) != 0;
  for (P2pTask* task : counted) {
    PeerRegistrations::Pair& pair = pairs[pairOf[task->peer]];
    if (task->send) {
      pair.nSends++;
      continue;
    }
    task->reg = local ? registry_.find(task->buff, task->bytes) : nullptr;
    if (task->reg == nullptr && graphRegisters(task->bytes, task->stream)) {
      NCCLCHECK(registry_.acquireForGraph(task->buff, task->bytes, task->stream, &task->reg));
    }
    pair.recvs.push_back(PeerRegistrations::RecvOffer{task->reg, task->buff});
  }
  NCCLCHECK(peerRegs_.exchangePairs(collectives_.transportContext(), local && registry_.hasLocal(), &pairs));

  std::map<int, size_t> sendIndex, recvIndex;
  const int rank = ctx_.comm->rank_;
  for (P2pTask* task : counted) {
    const PeerRegistrations::Pair& pair = pairs[pairOf[task->peer]];
    if (task->send) {
      task->direct = pair.sendDest[sendIndex[task->peer]++];
      INFO(kLogReg, "ncclSend rank %d -> %d, %zu bytes: %s", rank, task->peer, task->bytes,
           task->direct != nullptr ? "zero-copy (written into the receiver's registered buffer)"
                                   : "copy path (the receiver's buffer is not registered or could not be mapped)");
    } else {
      const bool direct = pair.recvDirect[recvIndex[task->peer]++] != 0;
      INFO(kLogReg, "ncclRecv rank %d <- %d, %zu bytes: %s", rank, task->peer, task->bytes,
           direct ? "zero-copy (the sender writes into the registered buffer)"
                  : (task->reg == nullptr ? "copy path (the buffer is not registered)"
                                          : "copy path (the sender could not map the buffer)"));
      task->direct = direct ? task->buff : nullptr;
      if (!direct) task->reg = nullptr;
    }
  }
  return dropReleasedPeerMappings();
}

}  // namespace braid
