// The puts to other hosts that streams hand over to the network thread (net_backend.h), and the
// host words the streams write and wait on: for eager puts a ready and a done slot per sequence
// number (kPutSlots may wait for their streams at once), for puts captured in CUDA graphs a request
// and a done word per graph slot (kNetGraphPuts held by live graphs at once; a slot comes back when
// its graph is destroyed, register/graph_hold.h). Enqueuing happens on the caller's thread; next()
// and markRead() on the network thread.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_driver.h"
#include "register/graph_hold.h"

namespace braid::window {

constexpr size_t kPutSlots = 1024;
constexpr size_t kNetGraphPuts = 4096;

// A put to a rank on another host: `bytes` from `src` (this rank's memory) into the peer's window
// `serial` at `offset`, then one signal on (ctx, sig). bytes 0: the signal alone.
struct NetPut {
  const void* src = nullptr;
  uint64_t bytes = 0;
  int peer = 0;
  int ctx = 0;
  int sig = 0;
  uint64_t serial = 0;
  uint64_t offset = 0;
  bool graph = false;  // sent by a CUDA graph's replay
};

// One put the thread is to send: an eager one (its sequence number) or a graph's (its slot).
struct Outgoing {
  uint64_t seq = 0;
  NetPut op;
  int graphSlot = -1;
};

class PutRequests {
 public:
  PutRequests() = default;
  ~PutRequests();
  PutRequests(const PutRequests&) = delete;
  PutRequests& operator=(const PutRequests&) = delete;
  [[nodiscard]] ncclResult_t allocate(const std::string& what);

  // Eager: queues the put and enqueues on `stream` the write of its ready slot, then the wait for
  // its done slot. Waits (up to NCCL_BOOTSTRAP_TIMEOUT, or until `failed`) while kPutSlots wait.
  [[nodiscard]] ncclResult_t enqueueEager(const CudaDriver* drv, const NetPut& op, cudaStream_t stream,
                                          const std::atomic<bool>& failed, const std::string& who);
  // Captured: takes a graph slot and records, in the capture of `stream`: clear done, raise the
  // request, wait for done (one stream, in order: each replay waits for its own put).
  [[nodiscard]] ncclResult_t enqueueGraph(const CudaDriver* drv, const NetPut& op, cudaStream_t stream,
                                          const std::string& who);

  // The network thread: a graph request raised since the last look (cleared before it returns, so
  // done is raised only after), else the oldest queued eager put whose stream got there.
  bool next(Outgoing* out);
  // The put's source is read: its stream may go on.
  void markRead(const Outgoing& out);
  // Teardown or failure: every stream that waits for a put to be read goes on.
  void releaseAll();

 private:
  // Eager: ready and done slots (host memory mapped for the GPU), the queue.
  uint64_t* readyHost_ = nullptr;
  uint64_t* doneHost_ = nullptr;
  uint64_t* readyDev_ = nullptr;
  uint64_t* doneDev_ = nullptr;
  std::mutex mutex_;
  std::deque<Outgoing> queue_;
  uint64_t issued_ = 0;
  std::atomic<uint64_t> completed_{0};
  // Graphs: request and done words, the puts, the slots.
  uint64_t* requestHost_ = nullptr;
  uint64_t* requestDev_ = nullptr;
  uint64_t* graphDoneHost_ = nullptr;
  uint64_t* graphDoneDev_ = nullptr;
  std::vector<NetPut> graphPuts_ = std::vector<NetPut>(kNetGraphPuts);
  std::atomic<size_t> graphCount_{0};   // slots ever used: [0, graphCount_)
  std::vector<size_t> freeGraphSlots_;  // used once, their graphs since destroyed
  std::shared_ptr<reg::ReleaseBox> graphReleases_ = std::make_shared<reg::ReleaseBox>();
};

}  // namespace braid::window
