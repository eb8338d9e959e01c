#include "register/graph_hold.h"

#include <utility>

#include "cuda/cuda_check.h"
#include "util/check.h"

namespace braid::reg {
namespace {

struct Hold {
  std::shared_ptr<ReleaseBox> box;
  uint64_t serial;
  bool given = true;  // false: no graph took it, so there is nothing to release
};

void releaseHold(void* p) {
  std::unique_ptr<Hold> hold(static_cast<Hold*>(p));
  if (hold->given) hold->box->note(hold->serial);
}

}  // namespace

void ReleaseBox::note(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_) released_.push_back(serial);
}

std::vector<uint64_t> ReleaseBox::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(released_, {});
}

void ReleaseBox::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  open_ = false;
  released_.clear();
}

ncclResult_t holdForCapturedGraph(cudaStream_t stream, const std::shared_ptr<ReleaseBox>& box, uint64_t serial) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  CUDACHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr));
  if (status != cudaStreamCaptureStatusActive || graph == nullptr) {
    WARN("graph registration: the stream is no longer being captured");
    return ncclInvalidUsage;
  }
  auto hold = std::make_unique<Hold>(Hold{box, serial});
  cudaUserObject_t object = nullptr;
  CUDACHECK(cudaUserObjectCreate(&object, hold.get(), releaseHold, 1, cudaUserObjectNoDestructorSync));
  Hold* owned = hold.release();  // the user object owns it now: its destructor runs releaseHold
  cudaError_t err = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
  if (err != cudaSuccess) {
    owned->given = false;
    (void)cudaUserObjectRelease(object, 1);
    CUDACHECK(err);
  }
  return ncclSuccess;
}

}  // namespace braid::reg
