// The network connections of one-sided operations with the ranks outside this rank's LSA team (other
// hosts): one connection each way per such peer, made through the communicator's network (net
// plugin) when the first window is registered. Pairwise: each rank listens for every remote peer,
// sends it the handle over the bootstrap, connects with the handle it gets back and accepts.
#pragma once

#include <nccl.h>
#include <nccl_net.h>

#include <memory>
#include <vector>

#include "window/window_context.h"

namespace braid::window {

class NetLinks {
 public:
  // Connects with every rank outside ctx's LSA team (none: nothing to do). Gives up after
  // NCCL_BOOTSTRAP_TIMEOUT, or when the communicator is aborted.
  [[nodiscard]] static ncclResult_t connect(const WindowContext& ctx, net::Network* network,
                                            std::unique_ptr<NetLinks>* out);
  ~NetLinks();
  NetLinks(const NetLinks&) = delete;
  NetLinks& operator=(const NetLinks&) = delete;

  const ncclNet_v11_t& net() const { return *net_; }
  bool empty() const { return peers_.empty(); }
  // The remote peers, in world rank order, and their connections.
  const std::vector<int>& peers() const { return peers_; }
  void* sendComm(size_t i) const { return send_[i]; }
  void* recvComm(size_t i) const { return recv_[i]; }

 private:
  explicit NetLinks(const ncclNet_v11_t* net) : net_(net) {}
  [[nodiscard]] ncclResult_t pollOnce(net::Network* network, const std::vector<std::vector<char>>& handles, bool* done);

  const ncclNet_v11_t* net_;
  std::vector<int> peers_;
  std::vector<void*> listen_, send_, recv_;
};

}  // namespace braid::window
