// User buffer registration of a communicator's data path: ncclCommRegister's registrations
// (register/registry.h), the peers' registrations mapped here (reg_exchange.h), and the exchanges
// in ncclGroupEnd's connect phase that decide which queued operations go zero-copy: collectives
// (reg_launch.cc, every rank at once) and sends/receives (p2p_reg.cc, pairwise).
//
// It owns the registrations and the zero-copy plans of the queued collectives. What an exchange
// needs of the rest it reads from the engines it is given at construction: the rings' topology and
// model (a collective goes zero-copy only on all-NVLink rings with a Simple ring plan), and which
// peers are P2P pairs (a send goes zero-copy only to one).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <vector>

#include "launch/coll_task.h"
#include "launch/data_path_context.h"
#include "launch/p2p_task.h"
#include "launch/reg_exchange.h"
#include "launch/registered_launch.h"
#include "register/registry.h"
#include "transport/transport.h"

namespace braid {

class CollectiveEngine;
class P2pEngine;

class BufferRegistration {
 public:
  BufferRegistration(const DataPathContext& ctx, const CollectiveEngine& collectives, const P2pEngine& p2p)
      : ctx_(ctx), collectives_(collectives), p2p_(p2p) {}
  BufferRegistration(const BufferRegistration&) = delete;
  BufferRegistration& operator=(const BufferRegistration&) = delete;

  // ncclCommRegister (its REG line says what the registration will be used for) / ncclCommDeregister.
  [[nodiscard]] ncclResult_t add(void* buff, size_t size, void** handle);
  [[nodiscard]] ncclResult_t remove(void* handle) { return registry_.remove(handle); }
  reg::Registry& registry() { return registry_; }

  // Collectives (reg_launch.cc): whether a queued one may go zero-copy, and the exchange with the
  // peers that decides it (collective, in the connect phase, after the rings are connected).
  bool needsExchange(const std::vector<CollTask>& queue) const;
  [[nodiscard]] ncclResult_t exchange(const std::vector<CollTask>& queue);
  // The zero-copy plans of the n queued collectives, in queue order (the copy path for those no
  // exchange planned), and none left here.
  std::vector<RegisteredLaunch> takePlans(size_t n);
  void dropPlans() { plans_.clear(); }

  // Sends and receives (p2p_reg.cc): whether a queued one may go zero-copy, and the pairwise
  // exchange that decides it (after the point-to-point connect), which sets the zero-copy ones'
  // P2pTask::direct and reg.
  bool needsP2pExchange(const std::vector<P2pTask>& queue) const;
  [[nodiscard]] ncclResult_t exchangeP2p(std::vector<P2pTask>* queue);

 private:
  // NCCL_GRAPH_REGISTER applies: the operation is captured and of the zero-copy size.
  bool graphRegisters(size_t bytes, cudaStream_t stream) const;
  bool graphRegisters(const CollTask& task) const;
  // Released registrations (ours retired, the peers' unmapped), around every exchange.
  void collectReleased();
  [[nodiscard]] ncclResult_t dropReleasedPeerMappings();
  // Large enough for zero-copy: the exchange that decides it pays (reg_launch.cc).
  bool zeroCopySize(size_t bytes, cudaStream_t stream) const;
  bool p2pZeroCopySize(const P2pTask& task) const;  // to a P2P peer, and large enough
  bool p2pMeetsPeer(const P2pTask& task) const;     // its pair meets in exchangeP2p

  const DataPathContext& ctx_;
  const CollectiveEngine& collectives_;
  const P2pEngine& p2p_;
  reg::Registry registry_;      // this rank's registrations
  PeerRegistrations peerRegs_;  // the peers' ones mapped here
  // The zero-copy plans of the queued collectives (same length as the queue once the connect phase
  // ran, else empty).
  std::vector<RegisteredLaunch> plans_;
};

}  // namespace braid
