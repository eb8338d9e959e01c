// The machinery of one communicator's one-sided operations (ncclPutSignal, ncclSignal,
// ncclWaitSignal): the signal memory, registered as a window by every rank alike at the first
// registration (one_sided_setup.cc), the copy-engine backend for the LSA team and the network
// backend for other hosts, which also serves device communicators' GIN; and the checks NCCL makes
// of an operation's target (one_sided.cc). The windows operations name are the Manager's.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_driver.h"
#include "window/net_backend.h"
#include "window/registrar.h"
#include "window/rma_backend.h"
#include "window/signal_pad.h"
#include "window/window.h"
#include "window/window_context.h"

namespace braid::window {

class OneSided {
 public:
  // ctx outlives it.
  OneSided(const WindowContext& ctx, const CudaDriver* drv) : ctx_(ctx), drv_(drv) {}
  OneSided(const OneSided&) = delete;
  OneSided& operator=(const OneSided&) = delete;

  // Collective, once, on every rank whatever it can do (so that registrations stay in step): the
  // signal memory through `registrar`, then the backends. A failure leaves one-sided operations
  // off (why()) and windows working.
  [[nodiscard]] ncclResult_t setUp(Registrar& registrar);
  bool tried() const { return tried_; }
  // Whether operations can run, or may once setUp has run (ncclCommQueryProperties' hostRmaSupport).
  bool possible() const { return backend_ != nullptr || !tried_; }
  bool ready() const { return backend_ != nullptr; }
  const std::string& why() const { return why_; }            // why they cannot run (empty while they can or may)
  Window* signalWindow() const { return padWindow_.get(); }  // null before a successful setUp

  // ncclPutSignal / ncclSignal / ncclWaitSignal's checks (a WARN names the problem): set up, flags 0,
  // the peer, signal index and context in range and reachable.
  [[nodiscard]] ncclResult_t checkReady(const char* caller) const;
  [[nodiscard]] ncclResult_t checkTarget(int peer, int sig, int ctx, const char* caller) const;
  [[nodiscard]] ncclResult_t checkSignalCall(const char* caller, int peer, int sig, int ctx, unsigned flags) const;
  // A put or signal to `op.peer` through the backend that reaches it; the target window is
  // `serial`, at `offset`. A wait for signals.
  [[nodiscard]] ncclResult_t route(const PutOp& op, uint64_t serial, uint64_t offset, bool graph, cudaStream_t stream);
  [[nodiscard]] ncclResult_t wait(const std::vector<WaitOp>& waits, bool graph, cudaStream_t stream);
  // Lets every wait in flight go (a communicator destroyed while signals have not come).
  void releaseWaits();

  // The network backend: windows it may land in, GIN connections (null while there is none).
  NetBackend* network() const { return net_.get(); }
  // GIN within one host: a network backend without links to other hosts (after a successful setUp).
  [[nodiscard]] ncclResult_t makeLocalNetwork();
  void stopNetwork() { net_.reset(); }  // its thread writes into windows and signal memory
  // After stopNetwork: the backends, then the signal memory. The current device must be ctx.cudaDev.
  void freeSignalMemory() {
    backend_.reset();
    padWindow_.reset();
    pad_.reset();
  }

 private:
  [[nodiscard]] ncclResult_t makeNetwork();

  const WindowContext& ctx_;
  const CudaDriver* drv_;
  bool tried_ = false;
  std::string why_;
  // Destroyed in reverse: the network's thread first, the signal memory last.
  std::unique_ptr<SignalPad> pad_;
  std::unique_ptr<Window> padWindow_;
  std::unique_ptr<RmaBackend> backend_;  // the LSA team's peers, and every wait
  std::unique_ptr<NetBackend> net_;      // peers on other hosts and GIN (none: no such peer, no network)
};

}  // namespace braid::window
