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

ncclResult_t Manager::putSignal(const void* src, size_t count, ncclDataType_t type, int peer, ncclWindow_t peerWin,
                                size_t peerOffset, int sig, int ctx, unsigned flags, cudaStream_t stream) {
  const char* caller = "ncclPutSignal";
  collectGraphReleases();
  NCCLCHECK(oneSided_.checkSignalCall(caller, peer, sig, ctx, flags));
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
  NCCLCHECK(oneSided_.route(op, target->serial, peerOffset, graph, stream));
  NCCLCHECK(noteUse(source, graph, stream));
  if (target != source) NCCLCHECK(noteUse(target, graph, stream));
  return noteUse(oneSided_.signalWindow(), graph, stream);
}

ncclResult_t Manager::signal(int peer, int sig, int ctx, unsigned flags, cudaStream_t stream) {
  const char* caller = "ncclSignal";
  collectGraphReleases();
  NCCLCHECK(oneSided_.checkSignalCall(caller, peer, sig, ctx, flags));
  ScopedDevice device(ctx_.cudaDev);
  RelaxedCaptureMode relaxed;  // the use tracking's event calls, while another stream may be captured
  bool graph = false;
  NCCLCHECK(captureState(stream, &graph));
  PutOp op;
  op.peer = peer;
  op.ctx = ctx;
  op.sig = sig;
  NCCLCHECK(oneSided_.route(op, 0, 0, graph, stream));
  return noteUse(oneSided_.signalWindow(), graph, stream);
}

ncclResult_t Manager::waitSignal(int nDesc, const ncclWaitSignalDesc_t* descs, cudaStream_t stream) {
  const char* caller = "ncclWaitSignal";
  collectGraphReleases();
  NCCLCHECK(oneSided_.checkReady(caller));
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
    NCCLCHECK(oneSided_.checkTarget(d.peer, d.sigIdx, d.ctx, caller));
    waits.push_back(WaitOp{d.peer, d.ctx, d.sigIdx, d.opCnt});
  }
  ScopedDevice device(ctx_.cudaDev);
  RelaxedCaptureMode relaxed;  // the use tracking's event calls, while another stream may be captured
  bool graph = false;
  NCCLCHECK(captureState(stream, &graph));
  NCCLCHECK(oneSided_.wait(waits, graph, stream));
  return noteUse(oneSided_.signalWindow(), graph, stream);
}

}  // namespace braid::window
