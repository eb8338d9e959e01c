// The data path of a communicator as core sees it: an object that queues operations, connects the
// rings lazily and launches kernels. launch/ implements it (CommDataPath); core only drives it from
// ncclGroupEnd and tears it down in finalize/destroy/abort, so core never depends on launch/. The
// API's operation calls reach its queue through operations() (core/operation_sink.h).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/operation_sink.h"
#include "core/share_group.h"

namespace braid::net {
class Network;
}

namespace braid {

class DataPathBase {
 public:
  virtual ~DataPathBase() = default;

  // Which connections connect() makes: all that the queued operations need, or only the
  // collectives' (ncclGroupSimulateEnd plans collectives on the connected topology, as NCCL does,
  // but makes no point-to-point connection: those involve only the peers a rank names).
  enum class ConnectScope { kAll, kCollectives };

  // Where the API's operation calls queue their operations, register buffers and keep their
  // reductions (launch/enqueue.cc).
  virtual OperationSink& operations() = 0;

  // True when queued operations need connections (within scope) that are not made yet, or another
  // exchange with their peers before they launch (the point-to-point count check).
  virtual bool needsConnect(ConnectScope scope) const = 0;
  // Makes the connections. Collective: every rank of the communicator runs it for the same
  // operation, so ncclGroupEnd runs the connects of several communicators concurrently.
  [[nodiscard]] virtual ncclResult_t connect(ConnectScope scope) = 0;
  // Launches every queued operation on its stream, in order, then empties the queue. Asynchronous.
  [[nodiscard]] virtual ncclResult_t launchPending() = 0;
  // Estimates in microseconds how long the queued operations would take (ncclGroupSimulateEnd),
  // then drops them: nothing is launched.
  [[nodiscard]] virtual ncclResult_t simulatePending(double* us) = 0;
  // Drops queued operations (a group that failed before launching).
  virtual void dropPending() = 0;
  // Checked every few milliseconds by a wait for launched work: an error ends the wait with it, the
  // work still in flight (a dead peer's: watch/peer_watch.h). Empty: the wait ends only when done.
  using IdleWaitCheck = std::function<ncclResult_t()>;
  // Waits until every launched operation has completed (ncclCommFinalize, ncclCommDestroy).
  [[nodiscard]] virtual ncclResult_t waitIdle(const IdleWaitCheck& check) = 0;
  // The communicator's abort flag has told its kernels to leave their wait loops
  // (watch/abort_flag.h), part way through an operation perhaps: nothing may reuse what they may
  // have left half-done (a share group's connections).
  virtual void kernelsAborted() = 0;
  // Makes the communicator, which has run operations, a member of a new share group, the group's
  // first (core/share_group.h); nothing if it is in one.
  [[nodiscard]] virtual ncclResult_t joinShareGroup(const std::shared_ptr<ShareGroup>& group) = 0;

  // Suspension (ncclCommSuspend / ncclCommResume, core/suspend.h). Device memory of this rank:
  // what suspension lets go, and what stays (ncclCommMemStats).
  struct MemoryStats {
    uint64_t suspendable = 0;
    uint64_t persistent = 0;
  };
  virtual MemoryStats memoryStats() const = 0;
  // Whether its memory can be suspended; if not, *why says why (for a WARN).
  virtual bool suspendable(std::string* why) const = 0;
  // Lets the suspendable memory go, keeping its addresses. No work may be in flight on any rank.
  [[nodiscard]] virtual ncclResult_t suspendMemory() = 0;
  // Remakes it at the same addresses. Collective with the peers it shares memory with.
  [[nodiscard]] virtual ncclResult_t resumeMemory() = 0;

  // The device address of the word that is non-zero once the communicator's kernels must stop
  // (the one its own kernels poll), for device communicators' abortFlag. Valid until destruction.
  [[nodiscard]] virtual ncclResult_t kernelAbortWord(uint32_t** out) = 0;
  // The communicator's network to other hosts, opened (with its proxy) at the first call.
  [[nodiscard]] virtual ncclResult_t openNetwork(net::Network** out) = 0;
};

}  // namespace braid
