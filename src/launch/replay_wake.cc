#include "launch/replay_wake.h"

#include "cuda/cuda_check.h"
#include "util/check.h"

namespace braid {
namespace {

struct WakeHold {
  std::shared_ptr<proxy::ProxyKicker> kicker;
};

// Runs on CUDA's callback thread: no CUDA calls here (the kick only notifies a condition variable).
void CUDART_CB wakeProxy(void* p) { static_cast<WakeHold*>(p)->kicker->kick(); }

void releaseWakeHold(void* p) { delete static_cast<WakeHold*>(p); }

}  // namespace

ncclResult_t addReplayWake(cudaStream_t stream, const std::shared_ptr<proxy::ProxyKicker>& kicker) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;  // asked for so that the query is not lossy; the node's edges are plain
  size_t n = 0;
  CUDACHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, &edges, &n));
  if (status != cudaStreamCaptureStatusActive) return ncclSuccess;
  auto hold = std::make_unique<WakeHold>(WakeHold{kicker});
  cudaUserObject_t object = nullptr;
  CUDACHECK(cudaUserObjectCreate(&object, hold.get(), releaseWakeHold, 1, cudaUserObjectNoDestructorSync));
  WakeHold* owned = hold.release();  // the user object owns it now
  const cudaError_t retained = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
  if (retained != cudaSuccess) {
    (void)cudaUserObjectRelease(object, 1);  // deletes `owned`
    CUDACHECK(retained);
  }
  cudaHostNodeParams params{};
  params.fn = wakeProxy;
  params.userData = owned;
  cudaGraphNode_t node = nullptr;
  // Not added to the stream's dependencies: the launch captured next does not wait for it.
  CUDACHECK(cudaGraphAddHostNode(&node, graph, deps, n, &params));
  return ncclSuccess;
}

}  // namespace braid
