// The checks NCCL makes of a one-sided operation's target (and the ones it leaves to luck), and
// the backend that reaches the peer.
#include "window/one_sided.h"

#include "util/check.h"
#include "util/log.h"

namespace braid::window {

ncclResult_t OneSided::checkReady(const char* caller) const {
  if (backend_ != nullptr) return ncclSuccess;
  if (!tried_) {
    WARN(
        "%s: %s: one-sided operations need the communicator's signal memory, which its first "
        "ncclCommWindowRegister sets up: register a window first",
        caller, ctx_.me().c_str());
  } else {
    WARN("%s: %s: one-sided operations cannot run on this communicator: %s", caller, ctx_.me().c_str(), why_.c_str());
  }
  return ncclInvalidUsage;
}

ncclResult_t OneSided::checkTarget(int peer, int sig, int ctx, const char* caller) const {
  if (peer < 0 || peer >= ctx_.nranks) {
    WARN("%s: %s: peer %d is out of range [0, %d)", caller, ctx_.me().c_str(), peer, ctx_.nranks);
    return ncclInvalidArgument;
  }
  if (ctx < 0 || ctx >= ctx_.numRmaCtx) {
    WARN("%s: %s: context %d is invalid (must be in [0, %d): config numRmaCtx)", caller, ctx_.me().c_str(), ctx,
         ctx_.numRmaCtx);
    return ncclInvalidArgument;
  }
  if (sig < 0 || sig >= ctx_.numRmaSig) {
    WARN("%s: %s: signal index %d is invalid (must be in [0, %d): config numRmaSig)", caller, ctx_.me().c_str(), sig,
         ctx_.numRmaSig);
    return ncclInvalidArgument;
  }
  if (backend_->reaches(peer) || (net_ != nullptr && net_->reaches(peer))) return ncclSuccess;
  if (ctx_.places[peer].hostHash != ctx_.places[ctx_.rank].hostHash) {
    WARN(
        "%s: %s: rank %d is on another host, and the network connections of one-sided operations could not be made "
        "(see the WARNs of the first ncclCommWindowRegister)",
        caller, ctx_.me().c_str(), peer);
  } else {
    WARN(
        "%s: %s: rank %d shares this host but not this rank's LSA team (the ranks of each host must be "
        "consecutive, and every host must hold as many): one-sided communication outside the LSA team is not "
        "implemented yet",
        caller, ctx_.me().c_str(), peer);
  }
  return ncclInvalidUsage;
}

ncclResult_t OneSided::checkSignalCall(const char* caller, int peer, int sig, int ctx, unsigned flags) const {
  NCCLCHECK(checkReady(caller));
  if (flags != 0) {
    WARN("%s: %s: flags is %u; it must be 0", caller, ctx_.me().c_str(), flags);
    return ncclInvalidArgument;
  }
  return checkTarget(peer, sig, ctx, caller);
}

ncclResult_t OneSided::route(const PutOp& op, uint64_t serial, uint64_t offset, bool graph, cudaStream_t stream) {
  if (backend_->reaches(op.peer)) return backend_->put(op, graph, stream);
  const NetPut put{op.src, op.bytes, op.peer, op.ctx, op.sig, serial, offset};
  return graph ? net_->putGraph(put, stream) : net_->put(put, stream);
}

ncclResult_t OneSided::wait(const std::vector<WaitOp>& waits, bool graph, cudaStream_t stream) {
  return backend_->wait(waits, graph, stream);
}

void OneSided::releaseWaits() {
  if (backend_ != nullptr) backend_->releaseWaits();
  if (net_ != nullptr) net_->releaseWaits();
}

}  // namespace braid::window
