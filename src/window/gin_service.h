// The proxy GIN transport's side of the network thread (net_backend.h): the GFDs device code posts
// (gin_comm.h) are carried out here. A put to a rank of this rank's LSA team is a copy into the
// peer's window through this rank's mapping of it, then an atomic add on the peer's signal, in one
// stream; a put to another host becomes a GinSend that the network thread stages and sends like a
// one-sided put's chunks, with a GIN header (gin_wire.h), and whose signal the receiving side adds
// after the data (deliver). A get from another host is a request message; the peer answers it with
// chunks of the data, which land here by the get's tag. A flush GFD completes once every such get
// has landed. Messages from peers are checked against this rank's own windows, contexts, signals and
// gets before anything is copied: one that fails is dropped with a WARN and an error.
//
// add and remove may be called from any thread; everything else is the network thread's.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "window/gin_comm.h"
#include "window/gin_wire.h"
#include "window/local_windows.h"
#include "window/window_context.h"

namespace braid::window {

// A GIN message for another host: a put (data, then its signal), a get's request, or a chunk of the
// reply to a peer's get.
struct GinSend {
  std::shared_ptr<GinComm> gin;  // the device communicator whose GFD it carries out (null: a reply)
  GinOp op{};
  int context = 0;
  uint32_t flags = 0;  // kGinGetRequest or kGinGetReply; 0: a put
  uint64_t tag = 0;    // a get's
  uint64_t devComm = 0;
  int peer = 0;
  const void* src = nullptr;  // device memory (a put's source, a reply's data); an inline value is in op
  uint64_t bytes = 0;         // payload
};

class GinService {
 public:
  // reachable(peer): this rank has connections to `peer` on another host. `stop` ends waits.
  GinService(const WindowContext& ctx, const LocalWindows& windows, const std::atomic<bool>& stop,
             std::function<bool(int)> reachable)
      : ctx_(ctx), windows_(windows), stop_(stop), reachable_(std::move(reachable)) {}

  // Device communicators with a proxy GIN connection, served until removed.
  void add(std::shared_ptr<GinComm> gin);
  void remove(uint64_t serial);

  // The thread's stream and a pinned word for inline values (both outlive the service's use).
  void attach(cudaStream_t stream, uint64_t* inlineStage) {
    stream_ = stream;
    inlineStage_ = inlineStage;
  }
  // Renews the thread's view of the device communicators after add or remove.
  void refresh();
  // Takes the next GFD of some device communicator: carried out here (a peer in the LSA team, a
  // flush), or, for another host, *send set. False when there was none.
  bool take(ncclResult_t* result, std::unique_ptr<GinSend>* send);
  // The next reply to a peer's get, oldest first (false: none).
  bool nextServe(std::unique_ptr<GinSend>* send);
  // The header of the chunk [sent, sent + chunk) of `s`'s payload.
  static GinHeader header(const GinSend& s, uint64_t sent, uint64_t chunk, bool last);
  // `s`'s last chunk is staged: its GFD is done (a put's counter raised first).
  [[nodiscard]] ncclResult_t staged(const GinSend& s);
  // A GIN message from `peer`.
  [[nodiscard]] ncclResult_t deliver(int peer, const char* message, size_t size);
  // Flush GFDs wait for every get to another host to land; those that came while some had not.
  void releaseFlushes();
  // After a failure: what is held of device communicators goes, so that destroying them does not
  // wait for operations that will never complete.
  void drop();

 private:
  [[nodiscard]] ncclResult_t runLocal(GinComm& gin, int context, int peer, const GinOp& op);
  [[nodiscard]] ncclResult_t startRemote(const std::shared_ptr<GinComm>& gin, int context, int peer, const GinOp& op,
                                         std::unique_ptr<GinSend>* send);
  [[nodiscard]] ncclResult_t serveGet(int peer, const GinHeader& h);
  [[nodiscard]] ncclResult_t landReply(int peer, const GinHeader& h, const char* payload);
  [[nodiscard]] ncclResult_t landPut(int peer, const GinComm& gin, const GinHeader& h, const char* payload);
  std::shared_ptr<GinComm> awaitGin(int peer, uint64_t serial);
  // windows_.lsaRange on this rank's own copy for a message from `peer`, waiting for a registration
  // that is being entered.
  [[nodiscard]] ncclResult_t ownRange(int peer, uint64_t serial, uint64_t offset, uint64_t bytes, const char* what,
                                      char** out);

  const WindowContext& ctx_;
  const LocalWindows& windows_;
  const std::atomic<bool>& stop_;
  std::function<bool(int)> reachable_;
  cudaStream_t stream_ = nullptr;
  uint64_t* inlineStage_ = nullptr;

  std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<GinComm>> gins_;  // resource window serial -> GIN
  std::atomic<bool> changed_{false};
  std::vector<std::shared_ptr<GinComm>> seen_;  // the thread's copy of gins_ (taken without the lock)

  // This rank's gets from other hosts, by tag: where the reply lands.
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
  std::deque<GinSend> serves_;
};

}  // namespace braid::window
