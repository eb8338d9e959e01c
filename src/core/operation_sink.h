// The side of a communicator's data path that the API's operation calls feed (launch/enqueue.cc):
// checked collectives and sends/receives to queue until their group ends, buffer registration, and
// the communicator's PreMulSum reductions. core only hands it over (DataPathBase::operations); the
// task types are launch/'s, declared here by name only, so core never depends on launch/.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

namespace braid {

struct CollTask;
struct P2pTask;
class UserRedOps;

class OperationSink {
 public:
  virtual ~OperationSink() = default;

  // Queues a checked collective; it is planned and launched when its group ends.
  virtual void enqueue(const CollTask& task) = 0;
  // Queues a checked, non-empty send or receive; launched after the group's collectives.
  virtual void enqueueP2p(const P2pTask& task) = 0;
  // The launch-completion event the queued sends and receives carry (null: none; P2pTask::launchEvent).
  virtual cudaEvent_t queuedP2pLaunchEvent() const = 0;
  // ncclCommRegister / ncclCommDeregister, their arguments checked by the caller.
  [[nodiscard]] virtual ncclResult_t registerBuffer(void* buff, size_t size, void** handle) = 0;
  [[nodiscard]] virtual ncclResult_t deregisterBuffer(void* handle) = 0;
  // ncclRedOpCreatePreMulSum's ops of this communicator.
  virtual UserRedOps& redOps() = 0;
};

}  // namespace braid
