// One-sided operations with ranks on other hosts, through the communicator's network (net_links.h)
// and a progress thread of their own; and the proxy GIN transport of device communicators
// (gin_comm.h), whose operations to any peer the same thread carries out (net_gin.cc).
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
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/cuda_driver.h"
#include "window/gin_comm.h"
#include "window/gin_wire.h"
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
  // The put whose chunks are being staged and posted: a stream's (out), or a GIN operation's (gin).
  struct Sending {
    Outgoing out{};
    std::shared_ptr<GinComm> gin;
    GinOp ginOp{};
    int ginContext = 0;
    uint32_t ginFlags = 0;  // a get's request or reply (gin_wire.h), else a put
    uint64_t ginTag = 0;    // the get's tag
    uint64_t ginDevComm = 0;
    // A stream's put (rma_wire.h); anything else is GIN's (gin_wire.h).
    bool streamPut() const { return gin == nullptr && ginFlags == 0; }
    int peer = 0;
    const void* src = nullptr;  // device memory; a GIN inline value is in ginOp
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
  std::shared_ptr<const WindowInfo> findWindow(uint64_t serial);
  // findWindow, waiting a little for a registration that is just ending (null: none came).
  std::shared_ptr<const WindowInfo> awaitWindow(int peer, uint64_t serial);
  const ncclNet_v11_t& net() const { return links_->net(); }
  size_t nPeers() const { return links_ == nullptr ? 0 : links_->peers().size(); }

  // net_gin.cc: GIN operations.
  // Takes the next GFD of some device communicator: runs it here when its peer is in the LSA
  // team, or makes it sending_ for another host. True when it did something.
  bool takeGin();
  // Renews ginsSeen_ after addGin or removeGin.
  void refreshGins();
  [[nodiscard]] ncclResult_t runLocal(GinComm& gin, int context, int peer, const GinOp& op);
  [[nodiscard]] ncclResult_t startRemote(const std::shared_ptr<GinComm>& gin, int context, int peer, const GinOp& op);
  [[nodiscard]] ncclResult_t startGet(const std::shared_ptr<GinComm>& gin, int context, int peer, const GinOp& op);
  [[nodiscard]] ncclResult_t deliverGin(int peer, const char* message, size_t size);
  [[nodiscard]] ncclResult_t serveGet(int peer, const GinHeader& h);
  [[nodiscard]] ncclResult_t landReply(int peer, const GinHeader& h, const char* payload);
  // A get's reply to send, the oldest first (null: none).
  bool nextServe();
  // Flush GFDs wait for every get to another host to land; those that came while some had not.
  void releaseFlushes();
  std::shared_ptr<GinComm> awaitGin(int peer, uint64_t serial);
  // `bytes` at `offset` of window `serial`: LSA rank `lsa`'s copy (this rank's own included), checked
  // against that rank's size (ncclInvalidUsage with a WARN naming `what`).
  [[nodiscard]] ncclResult_t windowPtr(uint64_t serial, uint64_t offset, uint64_t bytes, int lsa, const char* what,
                                       char** out);
  // windowPtr on this rank's own copy for a message from `peer`, waiting for a registration that
  // is just ending (awaitWindow).
  [[nodiscard]] ncclResult_t ownWindowPtr(int peer, uint64_t serial, uint64_t offset, uint64_t bytes, const char* what,
                                          char** out);
  void fail(ncclResult_t error);
  [[nodiscard]] ncclResult_t checkNotFailed() const;

  const CudaDriver* drv_;
  const WindowContext& ctx_;
  const SignalPad& pad_;
  std::unique_ptr<NetLinks> links_;
  std::vector<int> slotOf_;  // world rank -> index in links_->peers(), or -1

  PutRequests requests_;

  std::mutex windowsMutex_;
  std::map<uint64_t, std::shared_ptr<const WindowInfo>> windows_;  // serial -> this rank's window
  std::map<uint64_t, std::shared_ptr<GinComm>> gins_;              // resource window serial -> GIN
  std::atomic<bool> ginsChanged_{false};
  std::vector<std::shared_ptr<GinComm>> ginsSeen_;  // the thread's copy of gins_ (taken without the lock)
  // GIN gets from other hosts (the thread's own). This rank's: by tag, where the reply lands.
  struct PendingGet {
    int peer = 0;
    char* dst = nullptr;
    uint64_t bytes = 0, received = 0;
  };
  std::map<uint64_t, PendingGet> gets_;
  uint64_t lastGetTag_ = 0;
  struct ParkedFlush {
    std::shared_ptr<GinComm> gin;
    int context = 0, peer = 0;
  };
  std::vector<ParkedFlush> flushes_;
  // Peers' gets this rank is to answer, in arrival order.
  struct Serve {
    int peer = 0;
    uint64_t devComm = 0, tag = 0;
    const char* src = nullptr;
    uint64_t bytes = 0;
  };
  std::deque<Serve> serves_;

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
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace braid::window
