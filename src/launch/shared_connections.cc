#include "launch/shared_connections.h"

#include "core/peer_info.h"
#include "cuda/cuda_check.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {

ncclResult_t StepWords::alloc(size_t connections, std::shared_ptr<StepWords>* out) {
  std::shared_ptr<StepWords> words(new StepWords());
  const size_t bytes = 2 * sizeof(uint64_t) * (connections == 0 ? 1 : connections);
  CUDACHECK(cudaMalloc(&words->words_, bytes));
  // On a private stream, synchronized: the connect may run while the user's stream is captured.
  cudaStream_t stream = nullptr;
  CUDACHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaError_t e = cudaMemsetAsync(words->words_, 0, bytes, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  (void)cudaStreamDestroy(stream);
  CUDACHECK(e);
  *out = std::move(words);
  return ncclSuccess;
}

StepWords::~StepWords() {
  // No kernel uses them any more: the last holder was torn down after its kernels finished.
  if (words_ != nullptr) (void)cudaFree(words_);
}

uint64_t connectionToken(uint64_t commHash, ConnFamily family, int channel, uint64_t sender, uint64_t receiver) {
  const uint64_t fields[5] = {commHash, static_cast<uint64_t>(family), static_cast<uint64_t>(channel), sender,
                              receiver};
  const uint64_t token = hashBytes(fields, sizeof(fields));
  return token == 0 ? 1 : token;  // 0 means "none"
}

uint64_t gpuKey(uint64_t hostHash, int64_t busId) {
  const uint64_t fields[2] = {hostHash, static_cast<uint64_t>(busId)};
  return hashBytes(fields, sizeof(fields));
}

ncclResult_t SharedConnections::of(ShareGroup* group, bool graphMixing, SharedConnections** out) {
  if (group->state == nullptr) {
    auto order = std::make_unique<LaunchOrder>();
    NCCLCHECK(order->init(graphMixing));
    return adopt(group, &order, out);
  }
  *out = static_cast<SharedConnections*>(group->state.get());
  return ncclSuccess;
}

ncclResult_t SharedConnections::adopt(ShareGroup* group, std::unique_ptr<LaunchOrder>* order, SharedConnections** out) {
  if (group->state != nullptr) {
    WARN("a share group that has members with connections already cannot take another launch order");
    return ncclInternalError;
  }
  auto state = std::make_unique<SharedConnections>();
  state->order_ = std::move(*order);
  *out = state.get();
  group->state = std::move(state);
  return ncclSuccess;
}

const PooledConn* SharedConnections::find(ConnFamily family, int channel, uint64_t peerGpu, bool send) const {
  auto it = pool_.find(Key{static_cast<int>(family), channel, peerGpu, send});
  return it == pool_.end() ? nullptr : &it->second;
}

void SharedConnections::put(ConnFamily family, int channel, uint64_t peerGpu, bool send, const PooledConn& conn) {
  pool_[Key{static_cast<int>(family), channel, peerGpu, send}] = conn;
}

std::vector<uint64_t> tokenMessage(const std::vector<transport::ChannelLinks>& links,
                                   const std::vector<uint64_t>& mySend, const std::vector<uint64_t>& myRecv, int q) {
  const size_t n = links.size();
  std::vector<uint64_t> message(2 * n, 0);
  for (size_t c = 0; c < n; c++) {
    if (links[c].sendPeer == q) message[c] = mySend[c];
    if (links[c].recvPeer == q) message[n + c] = myRecv[c];
  }
  return message;
}

ReuseChoice agreeOnReuse(const std::vector<transport::ChannelLinks>& links, const std::vector<uint64_t>& mySend,
                         const std::vector<uint64_t>& myRecv, const std::map<int, std::vector<uint64_t>>& theirs) {
  const size_t n = links.size();
  ReuseChoice choice{std::vector<bool>(n, false), std::vector<bool>(n, false)};
  // The word of q's message at `index`, 0 when q sent none.
  auto word = [&](int q, size_t index) -> uint64_t {
    auto it = theirs.find(q);
    return it == theirs.end() || index >= it->second.size() ? 0 : it->second[index];
  };
  for (size_t c = 0; c < n; c++) {
    choice.send[c] = mySend[c] != 0 && mySend[c] == word(links[c].sendPeer, n + c);
    choice.recv[c] = myRecv[c] != 0 && myRecv[c] == word(links[c].recvPeer, c);
  }
  return choice;
}

}  // namespace braid
