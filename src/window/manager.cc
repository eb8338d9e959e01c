#include "window/manager.h"

#include <chrono>
#include <thread>
#include <vector>

#include "cuda/capture_mode.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "window/window_registry.h"

namespace braid::window {

ncclResult_t Manager::create(WindowContext ctx, std::unique_ptr<Manager>* out) {
  const CudaDriver* drv = nullptr;
  NCCLCHECK(cudaDriver(&drv));
  std::unique_ptr<Manager> m(new Manager(std::move(ctx), drv));
  NCCLCHECK(m->registrar_.open());
  *out = std::move(m);
  return ncclSuccess;
}

Manager::~Manager() {
  ScopedDevice device(ctx_.cudaDev);
  for (const auto& w : windows_.all()) {
    if (!w->deregistered) registryRemove(w->info->handle);
  }
  oneSided_.stopNetwork();  // its thread writes into windows and signal memory, reads the GIN rings
  gins_.clear();
  windows_.clear();  // unmaps every flat range
  // Here rather than in the members' destructors, which run once this device scope has ended.
  oneSided_.freeSignalMemory();
  registrar_.closeStream();
}

void Manager::release(bool abort, bool peerFailed) {
  // Every eager one-sided operation notes the signal memory's window, so its tracker says whether
  // any may still run; unmapping under a stream that still waits on signal memory would fault.
  if (oneSided_.signalWindow() == nullptr) return;
  ScopedDevice device(ctx_.cudaDev);
  UseTracker& uses = oneSided_.signalWindow()->uses;
  if (!uses.pending()) return;
  if (!abort && !peerFailed) {
    const auto timeout = std::chrono::seconds(paramInt(ParamId::kBootstrapTimeout));
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (uses.pending() && !ctx_.peerFailed() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!uses.pending()) return;
    WARN(
        "%s: the communicator is destroyed while one-sided operations still wait for signals that have not come "
        "(after %lld s); they are released so that their streams drain",
        ctx_.me().c_str(), static_cast<long long>(timeout.count()));
  }
  oneSided_.releaseWaits();
  if (!uses.drain(std::chrono::seconds(10))) {
    INFO(kLogInit, "%s: one-sided operations are still running after their waits were released", ctx_.me().c_str());
  }
}

ncclResult_t Manager::registerWindow(void* buff, size_t size, int winFlags, ncclResult_t refusal, ncclWindow_t* out) {
  // Registration is host-side work, allowed while this or another thread captures a stream.
  RelaxedCaptureMode relaxed;
  ScopedDevice device(ctx_.cudaDev);
  collectGraphReleases();
  if (refusal == ncclSuccess) refusal = registrar_.localRefusal(buff, size, winFlags);
  if (!oneSided_.tried()) NCCLCHECK(oneSided_.setUp(registrar_));
  std::unique_ptr<Window> w;
  NCCLCHECK(registrar_.registerCollective(buff, size, winFlags, WindowRole::kUser, refusal, &w));
  registryAdd(w->info);
  if (oneSided_.network() != nullptr) oneSided_.network()->addWindow(w->serial, w->info);
  *out = windows_.add(std::move(w))->info->handle;
  return ncclSuccess;
}

void Manager::destroyWindow(Window* w) {
  if (oneSided_.network() != nullptr) oneSided_.network()->removeWindow(w->serial);
  registrar_.unpublish(w);
  windows_.erase(w);  // unmaps its flat range
}

void Manager::collectGraphReleases() {
  for (Window* w : windows_.takeReleased()) {
    INFO(kLogAlloc, "%s: window %llu unmapped: the last graph that used it was destroyed", ctx_.me().c_str(),
         static_cast<unsigned long long>(w->serial));
    destroyWindow(w);
  }
}

ncclResult_t Manager::noteUse(Window* w, bool graph, cudaStream_t stream) {
  if (graph && w == oneSided_.signalWindow()) return ncclSuccess;
  return windows_.noteUse(w, graph, stream);
}

ncclResult_t Manager::deregisterWindow(ncclWindow_t handle) {
  const char* caller = "ncclCommWindowDeregister";
  RelaxedCaptureMode relaxed;
  ScopedDevice device(ctx_.cudaDev);
  collectGraphReleases();
  if (handle == nullptr) return ncclSuccess;  // as NCCL
  Window* w = windows_.find(handle);
  if (w == nullptr) {
    WARN("%s: %s: win %p is not a window of this communicator (deregistered already?)", caller, ctx_.me().c_str(),
         static_cast<void*>(handle));
    return ncclInvalidArgument;
  }
  if (w->info->role == WindowRole::kDevResources) {
    WARN("%s: %s: win %p holds a device communicator's resources: ncclDevCommDestroy releases it", caller,
         ctx_.me().c_str(), static_cast<void*>(handle));
    return ncclInvalidUsage;
  }
  if (w->uses.pending()) {
    WARN(
        "%s: %s: window %p is still used by a one-sided operation pending on the GPU; synchronize its stream "
        "first (the window is kept)",
        caller, ctx_.me().c_str(), static_cast<void*>(handle));
    return ncclInvalidUsage;
  }
  registryRemove(handle);
  w->deregistered = true;
  if (w->graphRefs > 0) {
    INFO(kLogAlloc, "%s: %s: window %p stays mapped until the %d captured graphs that use it are destroyed", caller,
         ctx_.me().c_str(), static_cast<void*>(handle), w->graphRefs);
    return ncclSuccess;
  }
  destroyWindow(w);
  return ncclSuccess;
}

ncclResult_t Manager::userPtr(ncclWindow_t handle, void** out) {
  Window* w = windows_.find(handle);
  if (w == nullptr) {
    WARN("ncclWinGetUserPtr: %s: win %p is not a window of this communicator", ctx_.me().c_str(),
         static_cast<void*>(handle));
    return ncclInvalidArgument;
  }
  *out = w->info->userPtr;
  return ncclSuccess;
}

}  // namespace braid::window
