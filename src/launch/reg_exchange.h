// The peers' registered buffers, mapped into this process for a zero-copy operation: receive
// buffers that peers write into, or (ReduceScatter, Reduce) send buffers that peers read from.
//
// Registration is local (ncclCommRegister talks to nobody), so the ranks meet at the first
// operation that uses a registered buffer, in ncclGroupEnd's connect phase (every communicator of
// the group at once). Every rank of the operation takes part when its send or receive buffer is
// registered; one bootstrap allGather tells each rank every shared buffer's registration and
// offset. A registration a peer has not seen before is mapped (the allocation once per rank and
// registration, cached for the communicator's life): by pointer within one process, otherwise by
// the cuMem file descriptor (sent over the Unix socket of uds.h) or cudaIpc handle prepared at
// registration; then a second allGather tells everyone whether every mapping worked. Every rank
// ends with the same verdict: zero-copy on all of them, or the copy path on all of them.
//
// Point-to-point (exchangePairs): the two ranks of a pair meet instead, in the same connect phase,
// when one of their sends or receives of at least the zero-copy size may be zero-copy (p2p_reg.cc):
// the receiver offers its receive buffers, the sender maps them and says which it will write into.
// Each meeting also tells both ranks whether both held local registrations (pairHoldsRegistrations);
// such a pair keeps meeting, so a receive into an unregistered buffer beside registered ones stays
// a per-receive choice.
//
// Released registrations (deregistered, or graph registrations whose graphs are gone) ride on the
// exchanges: each rank announces up to kRetiredPerAnnounce serials it retired that the peer has not
// heard of, and the peers set their mappings of them aside (retiredMappings), to be unmapped once
// the kernels launched before have finished.
//
// The rule that all ranks pass registered buffers or none (seed 002): a rank whose shared buffer
// is not registered while another's is gets the copy path everywhere, with a WARN. A rank that
// registered nothing at all does not take part, so the others wait for it until
// NCCL_BOOTSTRAP_TIMEOUT and then fail with a WARN that names the rule. For a send and its receive
// the rule is per pair: register both buffers or neither (until the pair has met holding
// registrations on both sides, after which either may be unregistered).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "device/dev_types.h"
#include "register/registry.h"
#include "transport/memory.h"
#include "transport/transport.h"
#include "transport/uds.h"

namespace braid {

class PeerRegistrations {
 public:
  // Collective (see above). `buff`: this rank's shared buffer of the operation, its receive buffer
  // (peers write into it) or, when peersRead, its send buffer (peers read from it); `mine`: the
  // registration holding it (null when it is not registered). On success every rank sets *direct
  // to the same value; when true, peers->buff[r] is rank r's buffer in this process (ours is buff).
  [[nodiscard]] ncclResult_t exchange(const transport::Context& ctx, reg::Registration* mine, void* buff,
                                      bool peersRead, const char* opName, DevRegPeers* peers, bool* direct);

  // One receive buffer offered to its sender: `reg` holds it, or null when it is not registered.
  struct RecvOffer {
    reg::Registration* reg;
    char* buff;
  };
  // One pair of a pairwise exchange. In: `recvs`, this rank's receives from peer, and `nSends`, its
  // sends to peer, both counting only operations of the zero-copy size, in issue order. Out:
  // sendDest[i], where send i writes in peer's receive buffer (null: the copy path), and
  // recvDirect[i], whether receive i finds its data written in place. Both ranks agree on each.
  struct Pair {
    int peer;
    std::vector<RecvOffer> recvs;
    size_t nSends;
    std::vector<char*> sendDest;
    std::vector<char> recvDirect;
  };
  // Pairwise, with every peer in `pairs` at once (see above; reg_pair_exchange.cc): each phase
  // sends to every peer before it waits for any, so pairs never wait on each other in a cycle.
  // `holdsLocal`: this rank holds local registrations that it uses (NCCL_LOCAL_REGISTER).
  [[nodiscard]] ncclResult_t exchangePairs(const transport::Context& ctx, bool holdsLocal, std::vector<Pair>* pairs);
  // Whether, at their last pairwise exchange, both this rank and `peer` held local registrations.
  // Both ranks learn it from the same two headers, so they agree on it between exchanges.
  bool pairHoldsRegistrations(int peer) const { return pairHolds_.count(peer) != 0; }

  // This rank released these registrations: each peer hears of them at its next exchange with it.
  void noteRetired(const std::vector<uint64_t>& serials);
  // Mappings of peers' released registrations, set aside by exchange: unmap them (drop) only once
  // every kernel launched before the exchange has finished.
  bool hasRetiredMappings() const { return !retiredMappings_.empty(); }
  void dropRetiredMappings() { retiredMappings_.clear(); }

  static constexpr size_t kRetiredPerAnnounce = 8;

 private:
  // One buffer as its owner describes it to a peer (the wire format of both exchanges).
  struct Offer {
    int32_t registered;  // the buffer lies in a registration
    int32_t isNew;       // pairwise: the peer has not been told of it (descriptor and verdict follow)
    int32_t vmm;         // a cuMem mapping (peers in this process need access granted)
    int32_t pad;
    uint64_t serial;
    uint64_t offset;  // buffer - allocation base
    transport::ExportInfo info;
  };
  struct Announce;
  struct PairHeader;
  struct FdNote;
  // A rank's retired serials as one announcement carries them.
  struct RetiredList {
    uint64_t n;
    uint64_t serials[kRetiredPerAnnounce];
  };
  [[nodiscard]] ncclResult_t bindSocket(const transport::Context& ctx);
  static Offer describe(const reg::Registration* reg, const char* buff);  // reg null: not registered
  // Whether `peer` has not been told of our registration `serial` yet; it then counts as told, its
  // verdict pending (see told_).
  bool firstTell(int peer, uint64_t serial);
  [[nodiscard]] ncclResult_t sendFd(const transport::Context& ctx, const reg::Registration& mine, int peer, int pid,
                                    uint64_t socketSerial);
  // Where peer's offered buffer is in this process, mapping its allocation the first time; null
  // (remembered in unusable_) when it cannot be mapped.
  char* peerBuffer(const transport::Context& ctx, int peer, const Offer& offer);
  [[nodiscard]] ncclResult_t mapPeer(const transport::Context& ctx, int peer, const Offer& offer, char** base);
  [[nodiscard]] ncclResult_t receiveFd(const transport::Context& ctx, int peer, uint64_t serial, UniqueFd* fd);
  // Notes that peer's `offer` comes with a descriptor over the socket, if it does.
  void expectFd(const transport::Context& ctx, int peer, const Offer& offer);
  // Takes in every datagram queued on the socket; keepFd keeps the descriptors fds_ expects.
  [[nodiscard]] ncclResult_t drainFds(const transport::Context& ctx);
  void keepFd(const transport::Context& ctx, const FdNote& note, UniqueFd fd);
  void retirePeer(int me, int peer, const RetiredList& list);
  // Up to kRetiredPerAnnounce retired serials that `peer` (all peers when -1) has not heard of yet.
  RetiredList takeRetiredFor(const transport::Context& ctx, int peer);

  using Key = std::pair<int, uint64_t>;  // (rank, serial)
  std::map<Key, std::unique_ptr<transport::Block>> mapped_;
  std::vector<std::unique_ptr<transport::Block>> retiredMappings_;
  std::set<Key> unusable_;  // a peer's registration this rank could not map: the copy path, always
  // (peer, our serial) -> whether peer could map it, once peer's verdict on it is known. A serial
  // not in here for a peer is offered to it as new (its descriptor follows, a verdict is asked).
  std::map<Key, bool> told_;
  // The descriptors of the peers' new registrations this exchange maps (expectFd), from their
  // arrival until mapped; nothing else is kept, and nothing outlives the exchange.
  transport::FdInbox fds_;
  std::set<int> pairHolds_;  // see pairHoldsRegistrations
  // Our retired serials in release order, numbered from retiredBase_; retiredSent_[peer]: how far
  // peer has been told.
  std::vector<uint64_t> retiredQueue_;
  uint64_t retiredBase_ = 0;
  std::vector<uint64_t> retiredSent_;
  transport::UdsSocket socket_;
  uint64_t socketSerial_ = 0;
};

}  // namespace braid
