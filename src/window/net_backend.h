// One-sided operations with ranks on other hosts, through the communicator's network (net_links.h)
// and a progress thread of their own; and the proxy GIN transport of device communicators
// (gin_service.h), whose operations to any peer the same thread carries out.
//
// Send: streams hand puts over through put_requests.h (eager, or captured in a CUDA graph and sent
//   at each replay). The thread takes a put once its stream got there, copies the source to pinned
//   host memory in chunks of kNetChunkBytes (kNetPipelineDepth staged or in flight at once), lets
//   the stream go on after the last chunk is copied (the source may be reused), and sends each
//   chunk with a header (rma_wire.h) that names the window by its registration serial (the same on
//   every rank), the offset, the size and the signal, marked as a graph's where it is one. A GIN
//   put to another host goes the same way with a GIN header (gin_wire.h); its GFD is complete
//   (counter raised, consumer index moved) once its last chunk is staged.
// Receive: receives are kept posted on every remote peer's connection. A chunk is checked against
//   this rank's own window (serial known, range inside it, context and signal in range) before it
//   is copied there; the last chunk of a put then raises this rank's count of signals from that
//   peer on (ctx, sig): the counts word the copy-engine puts of the LSA team write for their peers
//   (pad_layout.h), or for a graph's signal the graph count word, added to with the one-thread
//   atomic kernel (device/signal_add.h), so ncclWaitSignal waits for both alike (ce_backend.h). A
//   GIN chunk lands the same way and its signal is added to the device communicator's signal. A
//   message that fails the checks is dropped with a WARN and becomes the communicator's
//   asynchronous error.
// Order: one peer's chunks travel one connection in the order the thread sends them, which for the
//   puts of one stream is their stream order (a put's chunks, then its signal); puts of different
//   streams go as their streams reach them. GIN operations run one at a time, in each ring's order.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/cuda_driver.h"
#include "window/gin_service.h"
#include "window/local_windows.h"
#include "window/net_links.h"
#include "window/put_requests.h"
#include "window/rma_wire.h"
#include "window/signal_pad.h"
#include "window/window_context.h"

namespace braid::window {

constexpr uint64_t kNetChunkBytes = uint64_t{256} << 10;
// Chunks staged or in flight at once, each way: the copy of one overlaps the network's work on the
// others.
constexpr int kNetPipelineDepth = 4;

class NetBackend {
 public:
  // Starts the thread. The current device must be ctx.cudaDev. `links` null: no other host (the
  // thread serves GIN within the LSA team only).
  [[nodiscard]] static ncclResult_t create(const CudaDriver* drv, const WindowContext& ctx, const SignalPad& pad,
                                           std::unique_ptr<NetLinks> links, std::unique_ptr<NetBackend>* out);
  ~NetBackend();  // stops the thread, then closes the connections
  NetBackend(const NetBackend&) = delete;
  NetBackend& operator=(const NetBackend&) = delete;

  bool reaches(int peer) const { return peer >= 0 && peer < static_cast<int>(slotOf_.size()) && slotOf_[peer] >= 0; }
  [[nodiscard]] ncclResult_t put(const NetPut& op, cudaStream_t stream);
  // The same in a stream being captured: every replay sends it.
  [[nodiscard]] ncclResult_t putGraph(const NetPut& op, cudaStream_t stream);
  // This rank's windows, which arriving chunks may land in and GIN operations name.
  void addWindow(uint64_t serial, std::shared_ptr<const WindowInfo> info);
  void removeWindow(uint64_t serial);
  // Device communicators with a proxy GIN connection, which the thread serves until removed.
  void addGin(std::shared_ptr<GinComm> gin);
  void removeGin(uint64_t serial);
  // Teardown: lets every stream that waits for a put to be read go on.
  void releaseWaits();

 private:
  // A pinned buffer of one chunk and its registration with each peer's connection (send buffers:
  // every peer's send connection; receive buffers: their own peer's receive connection).
  struct ChunkBuffer {
    char* buf = nullptr;
    std::vector<void*> mhandles;
    void* request = nullptr;  // the posted send or receive, while there is one
  };
  // The put whose chunks are being staged and posted: a stream's (out), or a GIN message (gin).
  struct Sending {
    Outgoing out{};
    std::unique_ptr<GinSend> gin;
    bool streamPut() const { return gin == nullptr; }
    int peer = 0;
    const void* src = nullptr;  // device memory; a GIN inline value is in gin->op
    uint64_t bytes = 0;
    uint64_t sent = 0;   // payload bytes staged so far
    int staged = -1;     // the send buffer holding a staged chunk not yet posted
    uint64_t chunk = 0;  // its payload
    size_t size = 0;     // its message: header and payload
    bool last = false;   // it is the put's last
  };
  struct Receiver {
    std::vector<ChunkBuffer> buffers;
    std::deque<int> posted;  // buffers with a receive posted, oldest first (messages complete in order)
    std::vector<int> idle;   // buffers to post a receive on
  };

  NetBackend(const CudaDriver* drv, const WindowContext& ctx, const SignalPad& pad, std::unique_ptr<NetLinks> links);
  [[nodiscard]] ncclResult_t allocate();
  void run();
  bool progressSend();
  bool completeSends();
  bool postSends();
  bool progressReceive(size_t i);
  [[nodiscard]] ncclResult_t stageChunk(int buffer);
  void writeHeader(char* buf) const;
  void finishStaging();
  [[nodiscard]] ncclResult_t deliver(size_t i, const char* message, size_t size);
  // The next message to send: a reply to a peer's get, a stream's put, or a GIN GFD's (carried out
  // at once when it stays on this host). False when there is none.
  bool nextSending();
  void startSending(std::unique_ptr<GinSend> gin);
  const ncclNet_v11_t& net() const { return links_->net(); }
  size_t nPeers() const { return links_ == nullptr ? 0 : links_->peers().size(); }
  void fail(ncclResult_t error);
  [[nodiscard]] ncclResult_t checkNotFailed() const;

  const CudaDriver* drv_;
  const WindowContext& ctx_;
  const SignalPad& pad_;
  std::unique_ptr<NetLinks> links_;
  std::vector<int> slotOf_;  // world rank -> index in links_->peers(), or -1

  PutRequests requests_;
  LocalWindows windows_;
  std::atomic<bool> stop_{false};
  GinService gin_;

  // The thread's own.
  cudaStream_t stream_ = nullptr;
  std::vector<ChunkBuffer> sendBuffers_;  // kNetPipelineDepth chunks staged or in flight at once
  std::vector<int> freeSends_;
  std::deque<int> postedSends_;  // in the order they were posted
  std::vector<Receiver> receivers_;
  uint64_t* countStage_ = nullptr;   // pinned: the count copied into the signal memory
  uint64_t* inlineStage_ = nullptr;  // pinned: a GIN inline value on its way to a window
  std::vector<uint64_t> received_;   // per (ctx, sig, peer): signals received over the network
  std::unique_ptr<Sending> sending_;
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace braid::window
