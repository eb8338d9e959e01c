// The data sockets of one socket-network connection and the threads that move payload parts over
// them (net/socket_net.h splits a large message into one contiguous part per data socket).
//
// With helper threads (NCCL_SOCKET_NTHREADS > 0, each owning NCCL_NSOCKS_PERTHREAD sockets: socket
// i belongs to thread i % nThreads) the copies into and out of the kernel run on several cores at
// once instead of all on the proxy thread of the communicator, which over loopback TCP is what
// bounds a NET hop's bandwidth. With 0 the caller's progress() moves the parts on its own thread.
//
// The connection's thread queues parts; each socket moves its parts in the order they were queued.
// A part is done when the counter it names has been decremented (release); the connection reads
// the counter with acquire before it hands the request back, so the bytes a helper received are
// visible to it by then. A helper starts at the first part queued on one of its sockets (a
// connection that only ever carries small messages starts none), waits in poll() while its
// sockets would block, and once it has nothing left spins for kIdleSpinUs (back-to-back steps then
// pay no wake-up) before it sleeps on a condition variable. A failure (a peer that closed or reset,
// a failed send) is logged once, naming the peer, and kept in error(); that helper then stops.
#pragma once

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/socket.h"

namespace braid::net {

// The WARN and the error of a connection whose peer closed it in the middle of a message.
ncclResult_t closedMidMessage(const std::string& peer, size_t left, size_t bytes);

class DataSockets {
 public:
  struct Part {
    std::atomic<int>* left;  // decremented once the part has moved
    char* ptr;
    size_t bytes;
  };

  // Takes the sockets; nThreads 0: no helpers, progress() moves the parts.
  DataSockets(std::vector<Socket> sockets, bool isSend, int nThreads, std::string peer);
  // Stops and joins the helpers: at once when they are idle, within kPollMs when one waits on a
  // socket (a peer that stopped reading or sending).
  ~DataSockets();
  DataSockets(const DataSockets&) = delete;
  DataSockets& operator=(const DataSockets&) = delete;

  int size() const { return static_cast<int>(sockets_.size()); }
  bool threaded() const { return !helpers_.empty(); }
  // The fds a reader on the caller's thread must watch (none when helpers read).
  std::vector<int> callerFds() const;
  // Whether a socket the caller's thread reads holds input the kernel no longer reports (TLS).
  bool callerHasBufferedInput() const;

  // Called by the connection's thread only.
  void queue(int socket, const Part& part);
  // Without helpers: moves what can move now. With them: the first helper's error, if any.
  [[nodiscard]] ncclResult_t progress();

 private:
  struct Helper;
  // A socket's parts; `current` is the one being moved, `done` its bytes moved.
  struct Lane {
    Socket* socket = nullptr;
    std::deque<Part> queued;  // guarded by the owning helper's mutex when threaded
    Part current{};
    size_t done = 0;
    bool busy = false;
  };
  static constexpr int kPollMs = 10;
  static constexpr int kIdleSpinUs = 50;

  // Moves lane's current part as far as the socket allows; *moved: some bytes moved.
  [[nodiscard]] ncclResult_t advance(Lane* lane, bool* moved);
  void run(Helper* helper);
  // A helper: takes the queued front part of every idle lane; returns how many lanes are busy.
  int takeParts(Helper* helper);
  // A helper with nothing to move: spins, then sleeps until a part is queued; false when stopping.
  bool waitForParts(Helper* helper);
  void waitOnSockets(Helper* helper);
  void noteError(ncclResult_t error);

  std::vector<Socket> sockets_;
  std::vector<Lane> lanes_;  // one per socket
  bool isSend_;
  std::string peer_;
  std::vector<std::unique_ptr<Helper>> helpers_;
  std::atomic<bool> stop_{false};
  std::atomic<int> error_{ncclSuccess};
};

}  // namespace braid::net
