// A communicator's way to other hosts: the network (net/network.h) and the proxy thread that moves
// its connections' slots (proxy/proxy.h), made the first time a connection crosses hosts, and the
// count of launches the proxy may have to serve (the communicator watch's, with a watch thread to
// say when they end: watch/comm_watch.h).
//
// Its owner declares it before the connections that use it, so that it is destroyed after them;
// inside, the proxy goes before the network. The launch counts and the abort flag are the
// communicator's, which outlives its data path.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "net/network.h"
#include "proxy/proxy.h"
#include "util/launch_counts.h"
#include "watch/abort_flag.h"

struct ncclComm;

namespace braid {

class NetworkLink {
 public:
  NetworkLink() = default;
  NetworkLink(const NetworkLink&) = delete;
  NetworkLink& operator=(const NetworkLink&) = delete;

  // Opens the network and starts the proxy (once); the proxy's errors become `comm`'s asynchronous
  // error, and the proxy reads the launch counts of `comm`'s watch.
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
  // Once every launched operation has finished: the peers' proxies learn that our connections
  // end, in order (before the connections go). None when the communicator's kernels were stopped.
  void farewell() {
    if (proxy_ != nullptr && !abort_->raised(watch::kAbortKernels)) proxy_->farewell();
  }

 private:
  std::unique_ptr<net::Network> network_;
  LaunchCounts* netLaunches_ = nullptr;      // the watch's; null without a watch thread to say when they end
  const watch::AbortFlag* abort_ = nullptr;  // the communicator's, once open
  std::unique_ptr<proxy::Proxy> proxy_;
};

}  // namespace braid
