// A communicator's way to other hosts: the network (net/network.h) and the proxy thread that moves
// its connections' slots (proxy/proxy.h), made the first time a connection crosses hosts, and the
// count of launches the proxy may have to serve (with a peer watch, which says when they end).
//
// Its owner declares it before the connections that use it, so that it is destroyed after them;
// inside, the proxy goes before the network and the launch counts it reads.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "net/network.h"
#include "proxy/proxy.h"
#include "util/launch_counts.h"

struct ncclComm;

namespace braid {

class NetworkLink {
 public:
  NetworkLink() = default;
  NetworkLink(const NetworkLink&) = delete;
  NetworkLink& operator=(const NetworkLink&) = delete;

  // Opens the network and starts the proxy (once); the proxy's errors become `comm`'s asynchronous
  // error, and `comm` learns the launch counts for its peer watch.
  [[nodiscard]] ncclResult_t open(ncclComm* comm);
  bool isOpen() const { return proxy_ != nullptr; }
  net::Network* network() const { return network_.get(); }
  proxy::Proxy* proxy() const { return proxy_.get(); }

  // Before a group's kernels (open only): wakes the proxy, and makes every stream of the group that
  // is being captured wake it at each replay (launch/replay_wake.h).
  [[nodiscard]] ncclResult_t beforeLaunch(const std::vector<cudaStream_t>& streams);
  // After a group's launches (those that failed part way too).
  void afterLaunch() {
    if (netLaunches_ != nullptr) netLaunches_->issued.fetch_add(1);
  }
  // The communicator's kernels were stopped: no farewell to the peers' proxies.
  void noteAbort() { aborted_ = true; }
  // Once every launched operation has finished: the peers' proxies learn that our connections
  // end, in order (before the connections go).
  void farewell() {
    if (proxy_ != nullptr && !aborted_) proxy_->farewell();
  }

 private:
  std::unique_ptr<net::Network> network_;
  std::unique_ptr<LaunchCounts> netLaunches_;  // null without a peer watch to say when they end
  std::unique_ptr<proxy::Proxy> proxy_;
  bool aborted_ = false;
};

}  // namespace braid
