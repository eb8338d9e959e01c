// The symmetric memory windows of one communicator and its one-sided operations: the object the
// communicator owns (ncclComm::windows_), created by the API layer at the first
// ncclCommWindowRegister. Its parts: the collective registration (registrar.h), the windows and
// what keeps them mapped (window_set.h), the one-sided machinery that the first registration sets
// up (one_sided.h; the operations themselves, rma_ops.cc), device communicators (dev_comm.cc) and
// their GIN connections (gin_setup.cc).
//
// Registration is collective: every rank gathers every rank's offer, maps its LSA team's
// allocations into a new flat range, and all agree on the outcome before anyone returns. The
// first registration also registers each rank's signal memory, which one-sided operations need.
// Deregistration is local; a window that captured graphs still use is unmapped when the last of
// them is destroyed, one that eager operations still use is kept and the call refused.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/windows_base.h"
#include "cuda/cuda_driver.h"
#include "window/dev_comm.h"
#include "window/one_sided.h"
#include "window/registrar.h"
#include "window/window.h"
#include "window/window_context.h"
#include "window/window_set.h"

namespace braid::window {

class Manager final : public CommWindowsBase {
 public:
  // The current device must be ctx.cudaDev.
  [[nodiscard]] static ncclResult_t create(WindowContext ctx, std::unique_ptr<Manager>* out);
  ~Manager() override;
  void release(bool abort, bool peerFailed) override;
  // collective_use.cc
  bool symmetricCopies(const void* ptr, uint64_t bytes, SymmetricCopies* out) const override;
  [[nodiscard]] ncclResult_t noteCollectiveUse(const void* ptr, bool graph, cudaStream_t stream) override;

  // ncclCommWindowRegister. `refusal` is a local error found before (a bad argument): the rank
  // still takes part, so that its peers fail with it instead of waiting. Collective.
  [[nodiscard]] ncclResult_t registerWindow(void* buff, size_t size, int winFlags, ncclResult_t refusal,
                                            ncclWindow_t* out);
  // ncclCommWindowDeregister (local).
  [[nodiscard]] ncclResult_t deregisterWindow(ncclWindow_t handle);
  // ncclWinGetUserPtr.
  [[nodiscard]] ncclResult_t userPtr(ncclWindow_t handle, void** out);

  // One-sided operations (rma_ops.cc); arguments are checked here.
  [[nodiscard]] ncclResult_t putSignal(const void* src, size_t count, ncclDataType_t type, int peer,
                                       ncclWindow_t peerWin, size_t peerOffset, int sig, int ctx, unsigned flags,
                                       cudaStream_t stream);
  [[nodiscard]] ncclResult_t signal(int peer, int sig, int ctx, unsigned flags, cudaStream_t stream);
  [[nodiscard]] ncclResult_t waitSignal(int nDesc, const ncclWaitSignalDesc_t* descs, cudaStream_t stream);

  // ncclDevCommCreate (dev_comm.cc): the resource window `ask` describes, made collectively (a
  // `refusal` found before still takes part, as in registerWindow). Every rank must ask alike.
  [[nodiscard]] ncclResult_t createDevComm(const DevCommAsk& ask, ncclResult_t refusal, DevCommMade* out);
  // ncclDevCommDestroy: releases the resource window (local; NULL: nothing was made).
  [[nodiscard]] ncclResult_t destroyDevComm(ncclWindow_t resourceWindow);

  // Whether one-sided operations can run, or may once the first registration sets them up
  // (ncclCommQueryProperties' hostRmaSupport).
  bool rmaPossible() const { return oneSided_.possible(); }

 private:
  Manager(WindowContext ctx, const CudaDriver* drv)
      : ctx_(std::move(ctx)), drv_(drv), registrar_(ctx_, drv), oneSided_(ctx_, drv) {}

  // dev_comm.cc
  [[nodiscard]] ncclResult_t agreeOnResources(ncclResult_t mine, uint64_t bytes);
  [[nodiscard]] ncclResult_t makeResourceWindow(uint64_t bytes, Window** out);
  // gin_setup.cc
  // Whether this rank can serve a proxy GIN connection; starts the thread for one within the LSA
  // team. Otherwise ncclInvalidUsage with a WARN.
  [[nodiscard]] ncclResult_t readyGin();
  // The GIN shape and resource asks for `ask`, and the signal ids it hands out (into *made and the
  // program's outGin*Start).
  [[nodiscard]] ncclResult_t planGin(const DevCommAsk& ask, GinShape* shape, GinPlaces* places,
                                     std::vector<ResourceAsk>* asks, DevCommMade* made);
  [[nodiscard]] ncclResult_t startGin(const GinShape& shape, const GinPlaces& places, Window* resources,
                                      DevCommMade* made);
  void stopGin(uint64_t serial);

  // manager.cc
  void destroyWindow(Window* w);
  void collectGraphReleases();
  // A use of w by an operation on `stream` (the signal memory lives as long as the communicator:
  // graphs need not hold it).
  [[nodiscard]] ncclResult_t noteUse(Window* w, bool graph, cudaStream_t stream);

  WindowContext ctx_;
  const CudaDriver* drv_;
  Registrar registrar_;  // after ctx_, which it reads
  WindowSet windows_;
  OneSided oneSided_;
  std::map<uint64_t, std::shared_ptr<GinComm>> gins_;  // resource window serial -> its GIN connection
};

}  // namespace braid::window
