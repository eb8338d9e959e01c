#include "launch/launch_order.h"

#include "cuda/cuda_check.h"
#include "util/check.h"

namespace braid {
namespace {

// The capture `stream` belongs to, 0 when it is not capturing.
ncclResult_t captureId(cudaStream_t stream, unsigned long long* id) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long captured = 0;
  CUDACHECK(cudaStreamGetCaptureInfo(stream, &status, &captured));
  if (status == cudaStreamCaptureStatusInvalidated) {
    WARN("stream %p: its capture was invalidated by an earlier call; the operation cannot be captured",
         static_cast<void*>(stream));
    return ncclInvalidUsage;
  }
  *id = status == cudaStreamCaptureStatusActive ? captured : 0;
  return ncclSuccess;
}

}  // namespace

LaunchOrder::~LaunchOrder() {
  if (last_ != nullptr) (void)cudaEventDestroy(last_);
  if (captured_ != nullptr) (void)cudaEventDestroy(captured_);
}

ncclResult_t LaunchOrder::init(bool mixing) {
  mixing_ = mixing;
  CUDACHECK(cudaEventCreateWithFlags(&last_, cudaEventDisableTiming));
  CUDACHECK(cudaEventCreateWithFlags(&captured_, cudaEventDisableTiming));
  return ncclSuccess;
}

ncclResult_t LaunchOrder::before(cudaStream_t stream) {
  unsigned long long id = 0;
  NCCLCHECK(captureId(stream, &id));
  launchCapture_ = id;  // after() needs it too: one query per launch
  if (id == 0) {
    const bool graphsMayHaveRun = mixing_ && capturedAny_;
    if ((launchedAny_ && stream != lastStream_) || graphsMayHaveRun) CUDACHECK(cudaStreamWaitEvent(stream, last_, 0));
    return ncclSuccess;
  }
  if (id == captureId_) {
    if (stream != captureStream_) CUDACHECK(cudaStreamWaitEvent(stream, captured_, 0));
    return ncclSuccess;
  }
  captureId_ = id;
  if (mixing_) CUDACHECK(cudaStreamWaitEvent(stream, last_, cudaEventWaitExternal));
  return ncclSuccess;
}

ncclResult_t LaunchOrder::after(cudaStream_t stream) {
  const unsigned long long id = launchCapture_;
  lastCaptured_ = id != 0;
  if (id == 0) {
    CUDACHECK(cudaEventRecord(last_, stream));
    lastStream_ = stream;
    launchedAny_ = true;
    return ncclSuccess;
  }
  CUDACHECK(cudaEventRecord(captured_, stream));
  if (mixing_) NCCLCHECK(linkToRecordNode(stream, id));
  captureStream_ = stream;
  capturedAny_ = true;
  return ncclSuccess;
}

// The capture's external record of last_ comes after every node the stream's next work would
// depend on; created at the capture's first launch.
ncclResult_t LaunchOrder::linkToRecordNode(cudaStream_t stream, unsigned long long id) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;  // asked for so that the query is not lossy; record edges are plain
  size_t n = 0;
  CUDACHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, &edges, &n));
  if (id != recordCaptureId_) {
    CUDACHECK(cudaGraphAddEventRecordNode(&recordNode_, graph, deps, n, last_));
    recordCaptureId_ = id;
    recordLinked_ = std::unordered_set<cudaGraphNode_t>(deps, deps + n);
    return ncclSuccess;
  }
  for (size_t i = 0; i < n; i++) {
    if (!recordLinked_.insert(deps[i]).second) continue;
    CUDACHECK(cudaGraphAddDependencies(graph, &deps[i], &recordNode_, nullptr, 1));
  }
  return ncclSuccess;
}

ncclResult_t LaunchOrder::join(cudaStream_t other) {
  CUDACHECK(cudaStreamWaitEvent(other, lastCaptured_ ? captured_ : last_, 0));
  return ncclSuccess;
}

}  // namespace braid
