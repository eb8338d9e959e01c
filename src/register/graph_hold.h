// Graph registration's lifetime: a registration made while a stream was being captured belongs to
// the graphs that use it, and is released when the last of them is destroyed.
//
// Each captured operation that uses such a registration hands its graph a CUDA user object. CUDA
// destroys that object on a thread of its own once the graph (every instantiation of it, and every
// launch still running) is gone, where no CUDA call may be made; so the destructor only notes the
// registration's serial in a ReleaseBox, and the communicator collects the notes at its next call
// (Registry::collectGraphReleases). The box is shared: a graph may outlive its communicator, and
// then the note goes nowhere.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace braid::reg {

class ReleaseBox {
 public:
  // From the user object's destructor (any thread).
  void note(uint64_t serial);
  // The serials noted since the last call.
  std::vector<uint64_t> take();
  // The communicator is going away: later notes are dropped.
  void close();

 private:
  std::mutex mutex_;
  std::vector<uint64_t> released_;
  bool open_ = true;
};

// Gives the graph that `stream` is capturing a reference that notes `serial` in `box` when the
// graph is destroyed. On failure nothing will be noted.
[[nodiscard]] ncclResult_t holdForCapturedGraph(cudaStream_t stream, const std::shared_ptr<ReleaseBox>& box,
                                                uint64_t serial);

}  // namespace braid::reg
