// One device communicator's proxy GIN connection, as the library's network thread serves it
// (net_backend.h): per GIN context and peer a ring of GFDs in pinned host memory that the device
// writes and the thread reads in order (nccl_device/gin_proxy.h), and where the context's device
// words live in the device communicator's resource window (signals, their offsets, counters,
// producer indices, the get bookkeeping, signal shadows, the contexts' descriptors). Being in the
// resource window, an LSA peer's signals are in reach of this rank's copies (a put to an LSA peer
// raises them with an atomic over NVLink).
#pragma once

#include <nccl.h>
#include <nccl_device/gin_proxy.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "window/dev_resources.h"
#include "window/gin_gfd.h"
#include "window/window.h"

namespace braid::window {

// What the program asked for, in the form the resource window is laid out from.
struct GinShape {
  int contexts = 0;  // 0: no GIN
  int signals = 0;   // per context
  int counters = 0;  // per context
  int nranks = 0;
  uint32_t queueSize = 0;  // GFDs per ring, a power of two
};

// The byte offsets of the GIN arrays in the resource window (each array context-major).
struct GinPlaces {
  uint32_t signals = 0, signalOffsets = 0, counters = 0, pis = 0, lastIssuedGet = 0, lastVisibleGet = 0, shadows = 0,
           contexts = 0;  // handles (128-byte units), as layOutResources writes them
};

// The resource asks for `shape` (appended to `asks`), whose handles land in *places.
void askGinResources(const GinShape& shape, GinPlaces* places, std::vector<ResourceAsk>* asks);

class GinComm {
 public:
  // Allocates the rings and writes the contexts' descriptors into the resource window `resources`
  // (already zeroed), on `stream`. The current device must be the window's.
  [[nodiscard]] static ncclResult_t create(const GinShape& shape, const GinPlaces& places,
                                           std::shared_ptr<const WindowInfo> resources, uint64_t serial,
                                           cudaStream_t stream, std::unique_ptr<GinComm>* out);
  ~GinComm();
  GinComm(const GinComm&) = delete;
  GinComm& operator=(const GinComm&) = delete;

  const GinShape& shape() const { return shape_; }
  uint64_t serial() const { return serial_; }  // its resource window's: how peers name it
  // ncclDevComm.ginHandles[0]: the contexts' descriptors, in device memory.
  void* deviceHandle() const;
  uint64_t* signalShadows() const;  // ncclDevComm.ginSignalShadows

  // The network thread. The next written GFD of some ring, taken in turn: true with its ring and
  // op, or with *why non-empty for a GFD no device code writes. done() must follow before the
  // same ring is read again; it raises the ring's consumer index (the GFD is complete).
  bool take(int* context, int* peer, GinOp* op, std::string* why);
  void done(int context, int peer);

  // Device words, in this rank's address space: its own, or LSA rank `lsa`'s copy of them.
  unsigned long long* signal(int context, uint32_t id, int lsa) const;
  unsigned long long* counter(int context, uint32_t id) const;

 private:
  GinComm(const GinShape& shape, const GinPlaces& places, std::shared_ptr<const WindowInfo> resources, uint64_t serial)
      : shape_(shape), places_(places), resources_(std::move(resources)), serial_(serial) {}
  uint64_t offset(uint32_t handle) const { return uint64_t{handle} * kResourceHandleUnit; }
  char* local(uint32_t handle) const { return resources_->userPtr + offset(handle); }
  size_t ring(int context, int peer) const { return static_cast<size_t>(context) * shape_.nranks + peer; }

  GinShape shape_;
  GinPlaces places_;
  std::shared_ptr<const WindowInfo> resources_;
  uint64_t serial_;
  ncclGinProxyGfd_t* queues_ = nullptr;  // pinned, mapped: contexts * nranks rings
  uint32_t* cis_ = nullptr;              // pinned, mapped: contexts * nranks
  std::vector<uint32_t> next_;           // per ring: the next GFD to read (== its consumer index)
  size_t cursor_ = 0;                    // the ring take() looks at first
};

}  // namespace braid::window
