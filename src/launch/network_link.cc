#include "launch/network_link.h"

#include <algorithm>
#include <cstdio>

#include "core/comm.h"
#include "launch/replay_wake.h"
#include "util/check.h"

namespace braid {

ncclResult_t NetworkLink::open(ncclComm* comm) {
  if (proxy_ != nullptr) return ncclSuccess;
  NCCLCHECK(net::Network::open(comm->commHash_, &network_));
  char name[64];
  std::snprintf(name, sizeof(name), "rank %d proxy", comm->rank_);
  // The watch thread says when our launches have ended, which lets an idle proxy sleep long
  // (proxy/proxy.h, "Idle").
  netLaunches_ = comm->watch_.netLaunches();
  abort_ = &comm->watch_.abortFlag();
  proxy_ = std::make_unique<proxy::Proxy>(
      name,
      [comm](ncclResult_t error) {
        ncclResult_t expected = ncclSuccess;
        comm->asyncError_.compare_exchange_strong(expected, error);
      },
      netLaunches_);
  return ncclSuccess;
}

ncclResult_t NetworkLink::beforeLaunch(const std::vector<cudaStream_t>& streams) {
  if (proxy_ == nullptr) return ncclSuccess;
  proxy_->kick();  // wake it before the kernels need it
  std::vector<cudaStream_t> unique = streams;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  for (cudaStream_t stream : unique) NCCLCHECK(addReplayWake(stream, proxy_->kicker()));
  return ncclSuccess;
}

}  // namespace braid
