// Collective window registration for one communicator (registrar.cc has the message order): every
// rank's offer gathered, the LSA team's allocations mapped into a new flat range, the window's
// device struct published in the device table, and the agreement that every rank did. User
// windows, the signal memory of one-sided operations and device communicators' resources are all
// registered this way (window/manager.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_driver.h"
#include "window/fd_post.h"
#include "window/local_alloc.h"
#include "window/offer.h"
#include "window/struct_pool.h"
#include "window/window.h"
#include "window/window_context.h"
#include "window/window_table.h"

namespace braid::window {

class Registrar {
 public:
  // ctx outlives the registrar.
  Registrar(const WindowContext& ctx, const CudaDriver* drv) : ctx_(ctx), drv_(drv) {}
  ~Registrar();
  Registrar(const Registrar&) = delete;
  Registrar& operator=(const Registrar&) = delete;

  // The setup stream and this rank's descriptor socket. The current device must be ctx.cudaDev.
  [[nodiscard]] ncclResult_t open();
  // Registers [buff, +size) on every rank (collective). `refusal`: a local error found before, with
  // which this rank still takes part, so that its peers fail with it instead of waiting.
  [[nodiscard]] ncclResult_t registerCollective(void* buff, uint64_t size, int winFlags, WindowRole role,
                                                ncclResult_t refusal, std::unique_ptr<Window>* out);
  // Takes w's device struct out of the table and back to the pool (its flat range goes with w).
  void unpublish(Window* w);
  // Every rank's outcome of a collective step: all succeed, or all fail with the first failure.
  [[nodiscard]] ncclResult_t agree(ncclResult_t mine, const std::string& what);
  // ncclCommWindowRegister's checks of its arguments and of this GPU (a WARN names the problem).
  ncclResult_t localRefusal(void* buff, size_t size, int winFlags) const;
  // The device table of the communicator's windows, for a device communicator.
  [[nodiscard]] ncclResult_t tableHead(void** out) { return table_.head(setupStream_, out); }
  // A private non-blocking stream for struct writes and set-up copies.
  cudaStream_t setupStream() const { return setupStream_; }
  // Destroys that stream (at the communicator's end; the current device must be ctx.cudaDev).
  void closeStream();

 private:
  [[nodiscard]] ncclResult_t mapTeam(uint64_t serial, const std::vector<WindowOffer>& offers,
                                     const OfferVerdict& verdict, LocalAllocation* local, Window* w);
  [[nodiscard]] ncclResult_t publish(Window* w, WindowInfo* info);

  const WindowContext& ctx_;
  const CudaDriver* drv_;
  cudaStream_t setupStream_ = nullptr;
  FdPost fds_;
  StructPool structs_;
  WindowTable table_;
  uint64_t serial_ = 0;
};

}  // namespace braid::window
