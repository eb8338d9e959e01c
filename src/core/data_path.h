// The data path of a communicator as core sees it: an object that queues operations, connects the
// rings lazily and launches kernels. launch/ implements it (CommDataPath); core only drives it from
// ncclGroupEnd and tears it down in finalize/destroy/abort, so core never depends on launch/.
#pragma once

#include <nccl.h>

namespace braid {

class DataPathBase {
 public:
  virtual ~DataPathBase() = default;

  // True when queued operations need connections that are not made yet.
  virtual bool needsConnect() const = 0;
  // Makes the connections. Collective: every rank of the communicator runs it for the same
  // operation, so ncclGroupEnd runs the connects of several communicators concurrently.
  [[nodiscard]] virtual ncclResult_t connect() = 0;
  // Launches every queued operation on its stream, in order, then empties the queue. Asynchronous.
  [[nodiscard]] virtual ncclResult_t launchPending() = 0;
  // Drops queued operations (a group that failed before launching).
  virtual void dropPending() = 0;
  // Waits until every launched operation has completed (ncclCommFinalize).
  [[nodiscard]] virtual ncclResult_t waitIdle() = 0;
  // Raises the device-visible abort flag: every kernel of this communicator leaves its wait loops.
  virtual void signalAbort() = 0;
};

}  // namespace braid
