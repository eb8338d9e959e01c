// The peers' registered receive buffers, mapped into this process for a zero-copy operation.
//
// Registration is local (ncclCommRegister talks to nobody), so the ranks meet at the first
// operation that uses a registered buffer, in ncclGroupEnd's connect phase (every communicator of
// the group at once). Every rank of the operation takes part when its send or receive buffer is
// registered; one bootstrap allGather tells each rank every receive buffer's registration and
// offset. A registration a peer has not seen before is mapped (the allocation once per rank and
// registration, cached for the communicator's life): by pointer within one process, otherwise by
// the cuMem file descriptor (sent over the Unix socket of uds.h) or cudaIpc handle prepared at
// registration; then a second allGather tells everyone whether every mapping worked. Every rank
// ends with the same verdict: zero-copy on all of them, or the copy path on all of them.
//
// Released registrations (deregistered, or graph registrations whose graphs are gone) ride on the
// exchange: each rank announces up to kRetiredPerAnnounce serials it retired, and the peers set
// their mappings of them aside (retiredMappings), to be unmapped once the kernels launched before
// have finished.
//
// The rule that all ranks pass registered buffers or none (seed 002): a rank whose receive buffer
// is not registered while another's is gets the copy path everywhere, with a WARN. A rank that
// registered nothing at all does not take part, so the others wait for it until
// NCCL_BOOTSTRAP_TIMEOUT and then fail with a WARN that names the rule.
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
  // Collective (see above). `mine`: the registration holding this rank's receive buffer (null when
  // it is not registered). On success every rank sets *direct to the same value; when true,
  // peers->recvbuff[r] is rank r's receive buffer in this process (ours is recvbuff itself).
  // `retired`: serials of this rank's released registrations, at most kRetiredPerAnnounce.
  [[nodiscard]] ncclResult_t exchange(const transport::Context& ctx, reg::Registration* mine, void* recvbuff,
                                      const std::vector<uint64_t>& retired, const char* opName, DevRegPeers* peers,
                                      bool* direct);
  // Mappings of peers' released registrations, set aside by exchange: unmap them (drop) only once
  // every kernel launched before the exchange has finished.
  bool hasRetiredMappings() const { return !retiredMappings_.empty(); }
  void dropRetiredMappings() { retiredMappings_.clear(); }

  static constexpr size_t kRetiredPerAnnounce = 8;

 private:
  struct Announce;
  [[nodiscard]] ncclResult_t bindSocket(const transport::Context& ctx);
  [[nodiscard]] ncclResult_t sendFds(const transport::Context& ctx, const reg::Registration& mine, const Announce* all);
  [[nodiscard]] ncclResult_t mapPeer(const transport::Context& ctx, int peer, const Announce& a, char** base);
  void retirePeer(int me, int peer, const Announce& a);
  [[nodiscard]] ncclResult_t receiveFd(const transport::Context& ctx, int peer, uint64_t serial,
                                       transport::UniqueFd* fd);

  using Key = std::pair<int, uint64_t>;  // (rank, serial)
  std::map<Key, std::unique_ptr<transport::Block>> mapped_;
  std::vector<std::unique_ptr<transport::Block>> retiredMappings_;
  std::set<Key> unusable_;                       // a rank could not map it: the copy path, always
  std::set<uint64_t> announced_;                 // our serials the peers have been told about
  std::map<Key, transport::UniqueFd> earlyFds_;  // descriptors that arrived before we looked for them
  transport::UdsSocket socket_;
  uint64_t socketSerial_ = 0;
};

}  // namespace braid
