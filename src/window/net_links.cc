#include "window/net_links.h"

#include <chrono>
#include <string>
#include <thread>

#include "bootstrap/tags.h"
#include "net/network.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket.h"

namespace braid::window {

NetLinks::~NetLinks() {
  for (void* l : listen_) {
    if (l != nullptr) (void)net_->closeListen(l);
  }
  for (void* s : send_) {
    if (s != nullptr) (void)net_->closeSend(s);
  }
  for (void* r : recv_) {
    if (r != nullptr) (void)net_->closeRecv(r);
  }
}

ncclResult_t NetLinks::pollOnce(net::Network* network, const std::vector<std::vector<char>>& handles, bool* done) {
  *done = true;
  for (size_t i = 0; i < peers_.size(); ++i) {
    // A valid place for the device handle, as NCCL gives: some plugins write it unconditionally.
    ncclNetDeviceHandle_v11_t* devHandle = nullptr;
    if (send_[i] == nullptr) {
      NCCLCHECK(net_->connect(network->context(), network->deviceFor(0), const_cast<char*>(handles[i].data()),
                              &send_[i], &devHandle));
    }
    if (recv_[i] == nullptr) NCCLCHECK(net_->accept(listen_[i], &recv_[i], &devHandle));
    if (send_[i] == nullptr || recv_[i] == nullptr) *done = false;
  }
  return ncclSuccess;
}

ncclResult_t NetLinks::connect(const WindowContext& ctx, net::Network* network, std::unique_ptr<NetLinks>* out) {
  std::unique_ptr<NetLinks> links(new NetLinks(&network->table()));
  for (int r = 0; r < ctx.nranks; ++r) {
    if (!ctx.inLsa(r)) links->peers_.push_back(r);
  }
  const size_t n = links->peers_.size();
  links->listen_.assign(n, nullptr);
  links->send_.assign(n, nullptr);
  links->recv_.assign(n, nullptr);
  std::vector<std::vector<char>> handles(n, std::vector<char>(NCCL_NET_HANDLE_MAXSIZE, 0));
  // Every listen and its handle first (sends do not wait for the peer), then the peers' handles.
  for (size_t i = 0; i < n; ++i) {
    std::vector<char> mine(NCCL_NET_HANDLE_MAXSIZE, 0);
    NCCLCHECK(links->net_->listen(network->context(), network->deviceFor(0), mine.data(), &links->listen_[i]));
    NCCLCHECK(ctx.bootstrap->send(links->peers_[i], tags::kRmaConnect, mine.data(), mine.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    NCCLCHECK(ctx.bootstrap->recv(links->peers_[i], tags::kRmaConnect, handles[i].data(), handles[i].size()));
  }
  const Deadline deadline = Deadline::after(std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout)), ctx.abortFlag);
  bool done = n == 0;
  while (!done) {
    NCCLCHECK(links->pollOnce(network, handles, &done));
    if (done) break;
    if (deadline.aborted()) return ncclInternalError;
    if (deadline.expired()) {
      WARN(
          "rank %d: one-sided operations: no network connection with every rank on another host after %.0f s "
          "(NCCL_BOOTSTRAP_TIMEOUT)",
          ctx.rank, deadline.timeoutSeconds());
      return ncclSystemError;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (void*& l : links->listen_) {
    if (l != nullptr) (void)links->net_->closeListen(l);
    l = nullptr;
  }
  INFO(kLogInit | kLogNet, "rank %d: one-sided operations connected with %zu ranks on other hosts over %s", ctx.rank, n,
       links->net_->name);
  *out = std::move(links);
  return ncclSuccess;
}

}  // namespace braid::window
