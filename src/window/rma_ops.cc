// ncclPutSignal, ncclSignal and ncclWaitSignal: the checks NCCL makes (and the ones it leaves to
// luck: ranges against the target's window size), then the backend that reaches the peer.
#include <cuda_runtime.h>

#include <limits>

#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/log.h"
#include "window/manager.h"

namespace braid::window {
namespace {

// Whether `stream` is being captured; a capture that was invalidated is an error.
ncclResult_t captureState(cudaStream_t stream, bool* graph) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDACHECK(cudaStreamIsCapturing(stream, &status));
  if (status == cudaStreamCaptureStatusInvalidated) {
    WARN("one-sided operation: the capture of stream %p was invalidated by an earlier error",
         static_cast<void*>(stream));
    return ncclInvalidUsage;
  }
  *graph = status == cudaStreamCaptureStatusActive;
  return ncclSuccess;
}

}  // namespace

ncclResult_t Manager::checkRmaReady(const char* caller) const {
  if (backend_ != nullptr) return ncclSuccess;
  if (!padTried_) {
    WARN(
        "%s: %s: one-sided operations need the communicator's signal memory, which its first "
        "ncclCommWindowRegister sets up: register a window first",
        caller, ctx_.me().c_str());
  } else {
    WARN("%s: %s: one-sided operations cannot run on this communicator: %s", caller, ctx_.me().c_str(),
         rmaWhy_.c_str());
  }
  return ncclInvalidUsage;
}

ncclResult_t Manager::checkTarget(int peer, int sig, int ctx, const char* caller) const {
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

ncclResult_t Manager::checkSignalCall(const char* caller, int peer, int sig, int ctx, unsigned flags) {
  collectGraphReleases();
  NCCLCHECK(checkRmaReady(caller));
  if (flags != 0) {
    WARN("%s: %s: flags is %u; it must be 0", caller, ctx_.me().c_str(), flags);
    return ncclInvalidArgument;
  }
  return checkTarget(peer, sig, ctx, caller);
}

ncclResult_t Manager::route(const PutOp& op, uint64_t serial, uint64_t offset, bool graph, cudaStream_t stream) {
  if (backend_->reaches(op.peer)) return backend_->put(op, graph, stream);
  const NetPut put{op.src, op.bytes, op.peer, op.ctx, op.sig, serial, offset};
  return graph ? net_->putGraph(put, stream) : net_->put(put, stream);
}

ncclResult_t Manager::putSignal(const void* src, size_t count, ncclDataType_t type, int peer, ncclWindow_t peerWin,
                                size_t peerOffset, int sig, int ctx, unsigned flags, cudaStream_t stream) {
  const char* caller = "ncclPutSignal";
  NCCLCHECK(checkSignalCall(caller, peer, sig, ctx, flags));
  const size_t size = dtypeSize(type);
  if (size == 0 || count > std::numeric_limits<uint64_t>::max() / size) {
    WARN("%s: %s: datatype %d / count %zu name no valid buffer size", caller, ctx_.me().c_str(), static_cast<int>(type),
         count);
    return ncclInvalidArgument;
  }
  const uint64_t bytes = static_cast<uint64_t>(count) * size;
  Window* target = peerWin == nullptr ? nullptr : windows_.find(peerWin);
  if (target == nullptr) {
    WARN("%s: %s: peerWin %p is not a window of this communicator", caller, ctx_.me().c_str(),
         static_cast<void*>(peerWin));
    return ncclInvalidArgument;
  }
  const uint64_t peerBytes = target->info->worldBytes[peer];
  if (peerOffset > peerBytes || bytes > peerBytes - peerOffset) {
    WARN("%s: %s: %llu bytes at offset %zu run past the end of rank %d's window (%llu bytes)", caller,
         ctx_.me().c_str(), static_cast<unsigned long long>(bytes), peerOffset, peer,
         static_cast<unsigned long long>(peerBytes));
    return ncclInvalidArgument;
  }
  Window* source = src == nullptr ? nullptr : windows_.holding(src, bytes);
  if (source == nullptr || (source->info->winFlags & kWinCollSymmetric) == 0) {
    WARN(
        "%s: %s: localbuff [%p, +%llu) must lie in a window of this communicator registered with "
        "NCCL_WIN_COLL_SYMMETRIC%s",
        caller, ctx_.me().c_str(), src, static_cast<unsigned long long>(bytes),
        source == nullptr ? "" : " (its window was registered without that flag)");
    return ncclInvalidArgument;
  }
  ScopedDevice device(ctx_.cudaDev);
  RelaxedCaptureMode relaxed;  // the use tracking's event calls, while another stream may be captured
  bool graph = false;
  NCCLCHECK(captureState(stream, &graph));
  PutOp op;
  op.src = src;
  op.dst = bytes > 0 && ctx_.inLsa(peer) ? target->info->lsaPtr(ctx_.lsaOf(peer), peerOffset) : nullptr;
  op.bytes = bytes;
  op.peer = peer;
  op.ctx = ctx;
  op.sig = sig;
  NCCLCHECK(route(op, target->serial, peerOffset, graph, stream));
  NCCLCHECK(noteUse(source, graph, stream));
  if (target != source) NCCLCHECK(noteUse(target, graph, stream));
  return noteUse(padWindow_.get(), graph, stream);
}

ncclResult_t Manager::signal(int peer, int sig, int ctx, unsigned flags, cudaStream_t stream) {
  const char* caller = "ncclSignal";
  NCCLCHECK(checkSignalCall(caller, peer, sig, ctx, flags));
  ScopedDevice device(ctx_.cudaDev);
  RelaxedCaptureMode relaxed;  // the use tracking's event calls, while another stream may be captured
  bool graph = false;
  NCCLCHECK(captureState(stream, &graph));
  PutOp op;
  op.peer = peer;
  op.ctx = ctx;
  op.sig = sig;
  NCCLCHECK(route(op, 0, 0, graph, stream));
  return noteUse(padWindow_.get(), graph, stream);
}

ncclResult_t Manager::waitSignal(int nDesc, const ncclWaitSignalDesc_t* descs, cudaStream_t stream) {
  const char* caller = "ncclWaitSignal";
  collectGraphReleases();
  NCCLCHECK(checkRmaReady(caller));
  if (nDesc <= 0 || descs == nullptr) {
    WARN("%s: %s: nDesc is %d and signalDescs %p; at least one descriptor is needed", caller, ctx_.me().c_str(), nDesc,
         static_cast<const void*>(descs));
    return ncclInvalidArgument;
  }
  std::vector<WaitOp> waits;
  for (int i = 0; i < nDesc; ++i) {
    const ncclWaitSignalDesc_t& d = descs[i];
    if (d.opCnt <= 0) {
      WARN("%s: %s: signalDescs[%d].opCnt is %d; it must be positive", caller, ctx_.me().c_str(), i, d.opCnt);
      return ncclInvalidArgument;
    }
    NCCLCHECK(checkTarget(d.peer, d.sigIdx, d.ctx, caller));
    waits.push_back(WaitOp{d.peer, d.ctx, d.sigIdx, d.opCnt});
  }
  ScopedDevice device(ctx_.cudaDev);
  RelaxedCaptureMode relaxed;  // the use tracking's event calls, while another stream may be captured
  bool graph = false;
  NCCLCHECK(captureState(stream, &graph));
  NCCLCHECK(backend_->wait(waits, graph, stream));
  return noteUse(padWindow_.get(), graph, stream);
}

}  // namespace braid::window
