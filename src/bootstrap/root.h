// The root of a unique id: the rendezvous server that ranks check in with (protocol: bootstrap.cc).
//
// A root serves exactly one job on its own thread, then closes its listener and ends:
// - success: once every rank of its block (and, with several roots, the first rank of the next
//   block) has checked in, it tells each rank the address of the next rank in the ring;
// - failure (inconsistent nranks or ids, a rank claimed twice, a rank that leaves early, ranks
//   that never come within the first rank's NCCL_BOOTSTRAP_TIMEOUT): one WARN in this process
//   naming the ranks, the same diagnosis sent to every rank connected, and, until the timeout, to
//   every rank that still checks in;
// - unused: if no rank checks in within the idle timeout (BRAID_UID_IDLE_TIMEOUT) it ends quietly,
//   so ids that are never used do not keep a thread and a port forever;
// - a check-in that cannot belong to any job (nranks beyond kBootstrapMaxRanks, a rank or id index
//   out of range, an unknown kind: wire.h) is refused alone, with a rate-limited WARN and a reply
//   saying why: it neither starts nor fails the job. The root keeps state only for ranks that
//   checked in, and waits at most kBootstrapMaxRootTimeoutMs whatever the first rank asks for.
// Its state lives on its own thread, so a detached root (ncclGetUniqueId) never dangles; a joined
// one (rank 0 under NCCL_COMM_ID) is stopped and joined by the owner's destructor.
// Children forked while a root runs close their copy of its listener (see root.cc for why).
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "util/socket.h"

namespace braid {

class BootstrapRoot {
 public:
  // Serves the ranks that connect to `listener` (listening with the id's magic) on a new thread.
  // idleTimeout 0 waits for the first rank forever.
  [[nodiscard]] static ncclResult_t start(Socket listener, std::chrono::milliseconds idleTimeout,
                                          std::unique_ptr<BootstrapRoot>* out);
  // BRAID_UID_IDLE_TIMEOUT, in milliseconds (0: forever).
  static std::chrono::milliseconds idleTimeoutFromParams();

  // Unless detached: asks the thread to stop (closing every connection) and joins it.
  ~BootstrapRoot();
  BootstrapRoot(const BootstrapRoot&) = delete;
  BootstrapRoot& operator=(const BootstrapRoot&) = delete;

  // Lets the thread finish its job on its own.
  void detach();
  // Waits for the thread to finish its job by itself (success, failure or timeout).
  void join();

 private:
  BootstrapRoot() = default;
  std::shared_ptr<std::atomic<bool>> stop_;
  std::thread thread_;
};

}  // namespace braid
