// Zero-copy sends and receives. A send of the zero-copy size (p2pZeroCopySize) to a peer linked by
// P2P goes straight into the peer's receive buffer when that buffer is registered (ncclCommRegister,
// or graph registration while the receive is captured) and the sender could map it; the receiver
// then copies nothing. The two ranks of each pair meet in ncclGroupEnd's connect phase when either
// has a registered (or captured) operation of that size with the other
// (PeerRegistrations::exchangePairs); both must, so the send buffer and its receive buffer are
// registered both or neither.
#include <map>
#include <vector>

#include "launch/comm_data_path.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// An eager send or receive goes zero-copy from this size: the exchange, a bootstrap round trip per
// group, costs smaller ones more than they save (2 H200, registered sendrecv of 1 MiB: 34 us with
// the exchange, 16 us without). A captured one exchanges once, at capture, so kZeroCopyMinBytes.
constexpr size_t kEagerP2pZeroCopyMinBytes = 16 << 20;

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
}

}  // namespace

// Both ranks of a pair see the same sizes (and, as with collectives, both capture or neither), so
// they count the same operations.
bool CommDataPath::p2pZeroCopySize(const P2pTask& task) const {
  if (task.peer == comm_->rank_ || task.bytes < kZeroCopyMinBytes) return false;
  if (p2pDirectPair_.empty() || p2pDirectPair_[task.peer] == 0) return false;
  return task.bytes >= kEagerP2pZeroCopyMinBytes || capturing(task.stream);
}

bool CommDataPath::p2pRegisters(const P2pTask& task) const {
  if (!p2pZeroCopySize(task)) return false;
  if (paramInt(ParamId::kLocalRegister) != 0 && registry_.hasLocal() &&
      registry_.find(task.buff, task.bytes) != nullptr) {
    return true;
  }
  return graphRegisters(task.bytes, task.stream);
}

bool CommDataPath::needsP2pRegExchange() const {
  for (const P2pTask& task : p2pQueue_) {
    // A peer not connected yet may turn out to be a P2P pair: the connect phase looks again.
    const bool unknownPair = p2pConnected_.empty() || p2pConnected_[task.peer] == 0;
    if (unknownPair ? task.peer != comm_->rank_ && task.bytes >= kZeroCopyMinBytes : p2pRegisters(task)) return true;
  }
  return false;
}

ncclResult_t CommDataPath::exchangeP2pRegistrations() {
  std::map<int, PeerRegistrations::Pair> pairs;  // the peers this rank meets, by rank
  for (const P2pTask& task : p2pQueue_) {
    if (p2pRegisters(task)) pairs[task.peer].peer = task.peer;
  }
  if (pairs.empty()) return ncclSuccess;
  collectReleasedRegistrations();
  const bool local = paramInt(ParamId::kLocalRegister) != 0;
  for (P2pTask& task : p2pQueue_) {
    auto it = pairs.find(task.peer);
    if (it == pairs.end() || !p2pZeroCopySize(task)) continue;
    if (task.send) {
      it->second.nSends++;
      continue;
    }
    task.reg = local ? registry_.find(task.buff, task.bytes) : nullptr;
    if (task.reg == nullptr && graphRegisters(task.bytes, task.stream)) {
      NCCLCHECK(registry_.acquireForGraph(task.buff, task.bytes, task.stream, &task.reg));
    }
    it->second.recvs.push_back(PeerRegistrations::RecvOffer{task.reg, task.buff});
  }
  std::vector<PeerRegistrations::Pair> list;
  list.reserve(pairs.size());
  for (auto& [peer, pair] : pairs) list.push_back(std::move(pair));
  NCCLCHECK(peerRegs_.exchangePairs(transportContext(), &list));

  std::map<int, size_t> sendIndex, recvIndex;
  std::map<int, const PeerRegistrations::Pair*> byPeer;
  for (const PeerRegistrations::Pair& pair : list) byPeer[pair.peer] = &pair;
  const int rank = comm_->rank_;
  for (P2pTask& task : p2pQueue_) {
    auto it = byPeer.find(task.peer);
    if (it == byPeer.end() || !p2pZeroCopySize(task)) continue;
    const PeerRegistrations::Pair& pair = *it->second;
    if (task.send) {
      task.direct = pair.sendDest[sendIndex[task.peer]++];
      INFO(kLogReg, "ncclSend rank %d -> %d, %zu bytes: %s", rank, task.peer, task.bytes,
           task.direct != nullptr ? "zero-copy (written into the receiver's registered buffer)"
                                  : "copy path (the receiver's buffer is not registered or could not be mapped)");
    } else {
      const bool direct = pair.recvDirect[recvIndex[task.peer]++] != 0;
      INFO(kLogReg, "ncclRecv rank %d <- %d, %zu bytes: %s", rank, task.peer, task.bytes,
           direct ? "zero-copy (the sender writes into the registered buffer)"
                  : (task.reg == nullptr ? "copy path (the buffer is not registered)"
                                         : "copy path (the sender could not map the buffer)"));
      task.direct = direct ? task.buff : nullptr;
      if (!direct) task.reg = nullptr;
    }
  }
  return dropReleasedPeerMappings();
}

}  // namespace braid
