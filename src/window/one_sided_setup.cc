// The set-up of one-sided operations (one_sided.h), at the first registration (or device
// communicator) on every rank alike.
#include <string>

#include "device/launch_kernel.h"
#include "device/signal_add.h"
#include "util/check.h"
#include "util/log.h"
#include "window/ce_backend.h"
#include "window/one_sided.h"
#include "window/support.h"

namespace braid::window {

ncclResult_t OneSided::makeNetwork() {
  net::Network* network = nullptr;
  if (!ctx_.openNetwork) return ncclInternalError;
  NCCLCHECK(ctx_.openNetwork(&network));
  std::unique_ptr<NetLinks> links;
  NCCLCHECK(NetLinks::connect(ctx_, network, &links));
  return NetBackend::create(drv_, ctx_, *pad_, std::move(links), &net_);
}

ncclResult_t OneSided::setUp(Registrar& registrar) {
  // Every rank takes part, whatever it can do, so that the registrations stay in step even where
  // the ranks' configurations differ.
  tried_ = true;
  PadLayout layout;
  layout.nCtx = ctx_.numRmaCtx;
  layout.nSig = ctx_.numRmaSig;
  layout.nranks = ctx_.nranks;
  std::string why;
  ncclResult_t refusal = ncclSuccess;
  if (ctx_.numRmaCtx <= 0) {
    why = "one-sided operations are disabled for this communicator (numRmaCtx = 0)";
    refusal = ncclInvalidUsage;
  } else if (!rmaSupport(drv_, ctx_.cudaDev, &why)) {
    INFO(kLogInit, "%s: no one-sided operations: %s", ctx_.me().c_str(), why.c_str());
    refusal = ncclInvalidUsage;
  }
  // The graph-mode signal kernel is loaded now, while no kernel of ours waits on this GPU (a lazy
  // first load may wait for the GPU to be idle: device/launch_kernel.h).
  KernelArch signalArch;
  if (refusal == ncclSuccess && loadSignalAddKernel(&signalArch) != cudaSuccess) {
    (void)cudaGetLastError();
    why = "the one-sided signal kernel could not be loaded on GPU " + std::to_string(ctx_.cudaDev);
    WARN("%s: %s", ctx_.me().c_str(), why.c_str());
    refusal = ncclUnhandledCudaError;
  }
  std::unique_ptr<SignalPad> pad;
  if (refusal == ncclSuccess)
    refusal = SignalPad::create(drv_, ctx_.cudaDev, layout, ctx_.anyLsaPeerProcess(), registrar.setupStream(), &pad);
  std::unique_ptr<Window> window;
  ncclResult_t result = registrar.registerCollective(pad ? pad->local() : nullptr, layout.bytes(), 0,
                                                     WindowRole::kSignals, refusal, &window);
  if (result != ncclSuccess) {
    why_ = why.empty() ? "setting up its signal memory failed on some rank (see the WARNs of the first "
                         "ncclCommWindowRegister)"
                       : why;
    return ncclSuccess;  // windows work without one-sided operations
  }
  pad->attach(window->info);
  pad_ = std::move(pad);
  padWindow_ = std::move(window);
  backend_ = std::make_unique<CeBackend>(drv_, ctx_, *pad_);
  if (ctx_.lsaSize < ctx_.nranks && makeNetwork() != ncclSuccess) {
    WARN(
        "%s: one-sided operations reach this rank's LSA team only: the connections to other hosts failed (see "
        "above)",
        ctx_.me().c_str());
  }
  return ncclSuccess;
}

ncclResult_t OneSided::makeLocalNetwork() {
  if (pad_ == nullptr) return ncclInternalError;
  return NetBackend::create(drv_, ctx_, *pad_, nullptr, &net_);
}

}  // namespace braid::window
