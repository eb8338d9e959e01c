// The proxy: one host thread per communicator that moves NET connections' FIFO slots between pinned
// host memory and the network (device/dev_types.h describes the FIFO; transport/net_connect.cc
// makes the connections).
//
// Send FIFO: the GPU fills a Simple slot, stores the step's bytes in sizes[step % kNetSizeSlots],
// then publishes tail (fence first). An LL step is published by its lines' flags instead: the GPU
// stores its size, marked kNetSizeLL, before the lines, and the step is filled once every line
// carries the flag (uint32_t)(step + 1) in both halves (8-byte data+flag words, so a line whose
// flags match holds its data); that saves the GPU a barrier and a system-scope fence per step. The
// proxy sends the filled steps in order, at most kFifoSlotsSimple at once, clears each one's size
// word when its send completes (the word is reused 8 steps later and must not announce a stale LL
// step), and publishes head = steps whose send completed, which lets the GPU reuse those slots. A
// Simple step travels rounded up to 16 bytes, an LL step from the LL FIFO with 8 more bytes, so that
// its size modulo 16 says LL.
// Receive FIFO: the proxy keeps a receive posted on every slot the GPU has released (step < head +
// slots), into the step's Simple slot; an LL step's lines are then copied into its LL slot (8-byte
// stores, so the GPU never sees a flag before its data). It publishes tail = steps received, in
// order; the GPU consumes them and advances head.
// Steps are absolute and never reset, like the GPU's, so the proxy needs no knowledge of the
// operations: it follows the counters.
//
// Idle (ProxyPacer, proxy/pacer.h): while data moves the thread polls; BRAID_PROXY_SPIN_US after
// its last progress it sleeps between polls, 20 us at first and doubling up to a bound, so an idle
// communicator costs no core.
// kick() (called at every launch that uses the network) ends a sleep at once; a captured launch
// adds a host node to its graph that kicks through a ProxyKicker, so a replay wakes the proxy as
// well (launch/replay_wake.h). Data from a peer ends a sleep at once too: the thread sleeps in
// ppoll() on an eventfd (kicks, changes) and on the epoll set of the built-in socket network's
// receiving sockets that it progresses (net/ready_scan.h), and after such a wake it polls for
// another spin window. Where that window moves no step (data the GPU has no slot for yet stays
// unread, and the epoll set stays readable), the sleeps stop watching the sockets until a step
// moves or a kick comes, so that unread data cannot keep the thread spinning. External network
// plugins give no sockets to watch: their data is seen at the next timed poll.
// The bound says how late the proxy may see the first steps of a kernel that starts long after
// its launch's kick (the host ahead of the GPU, as training loops are; a replay's kick comes just
// before its kernels), or a plugin's data:
// - 50 us within BRAID_PROXY_LAUNCH_WINDOW_MS of a kick, and while an eager launch has not ended
//   (LaunchCounts, given by the data path and kept by the peer watch, which asks CUDA about the
//   latest launch every BRAID_PEER_WATCH_MS). A proxy costs a fraction of a core then (19% on a
//   2-vCPU VM, ProxyTest.AKernelThatStartsLongAfterItsLaunchIsSentAtOnce); NCCL's proxy polls
//   without sleeping while it has work.
// - Once every launch has ended: 1/64 of the time since the last kick or step, between
//   BRAID_PROXY_MAX_SLEEP_US (1 ms) and 100 ms. Nothing of ours needs the thread before the next
//   kick then, and what a missed wake could cost stays under 2% of the quiet time before it; an idle
//   communicator wakes ~10 times a second instead of 1,000.
// - BRAID_PROXY_MAX_SLEEP_US without LaunchCounts (no peer watch).
//
// Errors: a network call that fails (a peer that closed or reset its connection) stops that FIFO,
// logs one WARN naming the connection (rank, peer, host, channel) and reports the error through
// the callback given at creation (the communicator's async error). The GPU side then waits until
// the communicator is aborted. The thread makes no CUDA call.
//
// Farewell: ranks destroy their communicators at different times, and a receive FIFO always has
// receives posted, so the peer's closing sockets would look like a failed peer (a WARN, and an
// async error that makes PyTorch's watchdog tear the process down) to a rank that destroys later.
// An orderly end (farewell(): ncclCommDestroy after the work finished, never abort) first sends
// what the GPU left in the send FIFOs (a kernel ends once its last steps are in the host FIFO,
// before the network has taken them), then a farewell on each: a message of kFarewellBytes, a size
// no step has (Simple steps are multiples of 16 bytes, LL steps 8 more). A receiving proxy that
// gets one stops that FIFO with an INFO line; a peer that dies or aborts sends none and is still
// reported.
#pragma once

#include <nccl.h>
#include <nccl_net.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/dev_types.h"
#include "proxy/pacer.h"
#include "util/launch_counts.h"

namespace braid::proxy {

// The host side of one NET connection, one direction, one channel. Pointers are into pinned host
// memory that stays valid until remove() has returned.
struct NetFifo {
  bool isSend = false;
  const ncclNet_v11_t* net = nullptr;
  void* comm = nullptr;     // sendComm or recvComm
  void* mhandle = nullptr;  // regMr of `buff`
  char* buff = nullptr;     // slots x slotBytes
  int slots = 0;
  size_t slotBytes = 0;
  uint64_t* tail = nullptr;   // send: the GPU's; receive: the proxy's
  uint64_t* head = nullptr;   // send: the proxy's; receive: the GPU's
  uint32_t* sizes = nullptr;  // send only: bytes of each step, kNetSizeSlots words by step (dev_types.h)
  // LL over the network (else null): the LL FIFO, kFifoSlotsLL slots. A sender ships an LL step from
  // here with an 8-byte trailer; a receiver copies an LL step from the Simple slot it landed in.
  char* llBuff = nullptr;
  size_t llSlotBytes = 0;
  int tag = 0;
  int peer = -1;     // the rank at the other end
  std::string what;  // "rank 0 -> rank 2 (host ...), channel 1": leads the WARN of a failure
};

class Proxy;

constexpr size_t kFarewellBytes = 1;
constexpr int kFarewellMs = 200;

// Kicks a proxy from code that may outlive it: a CUDA graph's host node holds one, and a graph can
// be replayed (wrongly) after its communicator is gone. A kick after the proxy's end does nothing.
class ProxyKicker {
 public:
  void kick();

 private:
  friend class Proxy;
  std::mutex mutex_;
  Proxy* proxy_ = nullptr;  // null once the proxy is destroyed
};

class Proxy {
 public:
  using ErrorSink = std::function<void(ncclResult_t)>;
  // Starts the thread. `name` prefixes its log lines; onError is called from the thread. launches
  // (optional, must outlive the proxy): the communicator's launches and which of them have ended;
  // without it the proxy never sleeps longer than BRAID_PROXY_MAX_SLEEP_US (see "Idle" above).
  Proxy(std::string name, ErrorSink onError, const LaunchCounts* launches = nullptr);
  ~Proxy();  // stops the thread; FIFOs still attached are dropped without further network calls
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts moving `fifos`; returns a key for remove().
  uint64_t add(std::vector<NetFifo> fifos);
  // Stops moving the FIFOs added under `key` and returns once the thread no longer touches them
  // (their requests in flight are abandoned: the connections are about to be closed).
  void remove(uint64_t key);
  // The orderly end (see the header comment): returns once every healthy send FIFO has sent its
  // remaining steps and its farewell, or after kFarewellMs, whatever the peers do.
  void farewell();
  // Work is coming (a launch that uses the network): poll now.
  void kick();
  // A kicker for this proxy that stays safe to use after its end.
  std::shared_ptr<ProxyKicker> kicker() const { return kicker_; }

 private:
  struct Fifo;
  struct Batch;
  void run();
  bool progressAll();
  bool progress(Fifo* f);
  static char* sendSlot(const NetFifo& io, uint64_t step, size_t* bytes);
  static bool llStepFilled(const NetFifo& io, uint64_t step);
  static uint64_t filledSteps(const Fifo& f);
  [[nodiscard]] ncclResult_t placeReceived(const NetFifo& io, uint64_t step, size_t bytes);
  void applyChanges();
  void sendFarewells();

  std::string name_;
  ErrorSink onError_;
  ProxyPacer pacer_;  // woken by kick (while it sleeps), add, remove, farewell, stop
  std::mutex mutex_;
  std::condition_variable applied_;  // the thread took the pending changes
  std::vector<std::unique_ptr<Batch>> pendingAdds_;
  std::vector<uint64_t> pendingRemoves_;
  bool farewellPending_ = false;
  uint64_t nextKey_ = 1;
  uint64_t changeSerial_ = 0;   // bumped by add/remove
  uint64_t appliedSerial_ = 0;  // what the thread has taken
  bool stop_ = false;
  std::atomic<bool> changes_{false};
  std::vector<std::unique_ptr<Batch>> batches_;  // the thread's own
  std::vector<int> peersGone_;                   // the thread's: ranks that sent a farewell
  std::shared_ptr<ProxyKicker> kicker_;
  std::thread thread_;
};

}  // namespace braid::proxy
