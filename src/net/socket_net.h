// The built-in socket network ("Socket"): the engine behind Braid's ncclNet table for hosts
// without another network (net/socket_net_plugin.cc exposes it with the plugin ABI).
//
// A connection is one control socket and nSocks data sockets (NCCL_SOCKET_NTHREADS x
// NCCL_NSOCKS_PERTHREAD), all TCP on the interface of the listening side. Every socket starts with
// the handshake of util/socket.h (type kNetSocket, the listener's random magic) and a hello naming
// its connection and its index, so one listener can take several connections at once.
//
// Messages go in order, each a header {bytes, tag} on the control socket, then the payload: on the
// control socket too when it is small (at most kSocketNetInlineBytes), else split into up to nSocks
// contiguous parts, part i on data socket i, which both ends compute from the size alone; helper
// threads move the parts (net/data_sockets.h), the caller's thread the control socket. Several
// messages may be in flight; each socket moves its parts in message order. A sender hands a
// socket all its queued pieces (headers and payloads) in one sendmsg(); a receiver reads its
// control socket into a small buffer, which takes a header and a small payload, or several
// messages, in one recv(). A NET hop of a small message is then one send, one epoll scan and one
// receive, where it was two sends and three receives. A receive learns the
// size from the header: a larger message than the receive's buffer is an error (named, not a
// silent truncation), a smaller one completes with its size.
//
// Control progress happens in test() (the caller's thread): nothing blocks, so a proxy thread can
// drive many connections; a receiving connection reads only when its thread's ReadyScan says one
// of its sockets has something (one epoll_wait per sweep over all connections,
// net/ready_scan.h). A peer that closes or resets its end fails the connection's requests with
// ncclRemoteError and one WARN naming the peer (between two messages: once a receive that waits
// for another is tested, since the last message may have been a farewell, proxy/proxy.h); so does
// a peer whose host stops acknowledging for BRAID_NET_SOCKET_TIMEOUT_MS (a dropped link), through
// the kernel's TCP timeouts.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/data_sockets.h"
#include "net/ready_scan.h"
#include "util/socket.h"
#include "util/socket_connector.h"

namespace braid::net {

constexpr size_t kSocketNetInlineBytes = size_t{64} * 1024;   // messages up to this travel on the control socket
constexpr size_t kSocketNetMinPartBytes = size_t{64} * 1024;  // a larger message uses one data socket per this much
constexpr int kSocketNetMaxSocks = 64;
constexpr int kSocketNetMaxThreads = 16;

// Sent by each socket of a connection right after the handshake: the listener groups a
// connection's sockets by connId and places each by index.
struct SocketNetHello {
  uint64_t connId;
  uint32_t index;   // 0: the control socket; 1..nSocks: data socket index - 1
  uint32_t nSocks;  // data sockets of the connection
};

// A hello the listener can place: its exact size, 1..kSocketNetMaxSocks data sockets and an index
// within them (so index < nSocks + 1, the size of the connection's socket list). Pure: the
// listener and the fuzz harness of tests/fuzz/ call it on the received bytes.
[[nodiscard]] bool parseSocketNetHello(const uint8_t* data, size_t size, SocketNetHello* out);

// What a listener publishes for connectors; fits in a plugin handle (128 bytes).
struct SocketNetHandle {
  uint64_t magic;
  SocketAddress addr;
  uint32_t pad;
};
static_assert(sizeof(SocketNetHandle) <= 128, "a net handle is at most 128 bytes");

// One send or receive.
struct SocketNetRequest {
  bool isSend = false;
  char* data = nullptr;
  size_t capacity = 0;  // a send: its size; a receive: its buffer's
  size_t size = 0;      // bytes moved: a send's size, a receive's message size once its header came
  int tag = 0;
  std::atomic<int> jobsLeft{0};  // parts not yet moved (a receive: counted once its header came)
  bool headerDone = false;
  ncclResult_t error = ncclSuccess;
  uint64_t header[2]{};  // {bytes, tag} as sent or received
};

// A connection's sockets and their queues of work; the send and the receive ends share it.
class SocketNetConn {
 public:
  SocketNetConn(Socket ctrl, std::vector<Socket> data, bool isSend, std::string peer);
  ~SocketNetConn();
  SocketNetConn(const SocketNetConn&) = delete;
  SocketNetConn& operator=(const SocketNetConn&) = delete;

  int nSocks() const { return data_->size(); }
  // Queues a send or a receive; its memory stays the caller's until test() says it is done.
  [[nodiscard]] ncclResult_t post(bool isSend, void* data, size_t bytes, int tag, SocketNetRequest** out);
  // Moves what can move now, then reports whether `req` is done (and frees it when it is).
  [[nodiscard]] ncclResult_t test(SocketNetRequest* req, bool* done, size_t* size);

 private:
  struct Job {
    SocketNetRequest* req;
    char* ptr;
    size_t bytes;
    size_t done;
  };
  // The parts of a message of `bytes` over the data sockets: how many (1..nSocks).
  int partsFor(size_t bytes) const;
  void queuePayload(SocketNetRequest* req);
  [[nodiscard]] ncclResult_t progress();
  [[nodiscard]] ncclResult_t progressSendCtrl();
  [[nodiscard]] ncclResult_t progressRecvCtrl();
  [[nodiscard]] ncclResult_t readCtrl(Job* job, bool* closed);
  void queueNextHeader();
  void fail(ncclResult_t error);
  // Receive side: whether a read may find data (net/ready_scan.h); true where no scan applies.
  bool mayRead();

  Socket ctrl_;
  std::unique_ptr<DataSockets> data_;
  bool isSend_;
  std::string peer_;
  std::deque<SocketNetRequest*> requests_;  // posted, not yet handed back done
  std::deque<Job> ctrlJobs_;
  size_t nextHeader_ = 0;  // receive side: index in requests_ of the first receive without its header
  // Receive side: the peer closed between two messages. Not an error by itself (its last message
  // may have said goodbye, proxy/proxy.h); a receive still waiting for a message fails in test().
  bool peerClosed_ = false;
  ncclResult_t error_ = ncclSuccess;
  // Receive side, control socket: what one recv() brought beyond the job it was for (the next
  // headers and small payloads), served before the socket is read again; rxDrained_: a read this
  // progress() came back short, so the socket is empty until the scan says otherwise.
  std::vector<char> rxBuf_;
  size_t rxBegin_ = 0;
  size_t rxEnd_ = 0;
  bool rxDrained_ = false;
  std::vector<int> recvFds_;   // every socket's fd, for the scan (receive side)
  ReadyScan* scan_ = nullptr;  // the scan of the thread that registered the fds
  bool scanRefused_ = false;   // epoll refused them: always read
  uint64_t scanEpoch_ = 0;     // the scan this connection saw last
};

// A listener: accepts whole connections (control socket and every data socket).
class SocketNetListener {
 public:
  // Listens on `local` (port 0: ephemeral) and fills *handle for the connectors.
  [[nodiscard]] static ncclResult_t listen(const SocketAddress& local, SocketNetHandle* handle,
                                           std::unique_ptr<SocketNetListener>* out);
  // Non-blocking: *out stays null until a connection has all its sockets.
  [[nodiscard]] ncclResult_t accept(std::unique_ptr<SocketNetConn>* out);
  // Non-blocking: moves the handshakes of new sockets on without taking a connection.
  [[nodiscard]] ncclResult_t progressHandshakes() { return acceptor_.progress(); }

 private:
  // Connections whose sockets have not all arrived are capped: a peer that opens sockets for many
  // connection ids and never completes them loses its oldest ones instead of the process's fds.
  static constexpr size_t kMaxPartial = 64;
  struct Partial {
    std::vector<Socket> sockets;  // [0] control, [1..nSocks] data
    int arrived = 0;
    uint64_t order = 0;  // when its first socket arrived
  };
  // Drops the partial connection whose first socket arrived first, with an INFO line.
  void dropOldestPartial();
  SocketAcceptor acceptor_;
  std::map<uint64_t, Partial> partial_;  // by connection id
  uint64_t nextOrder_ = 0;
};

// A connection on its way: its sockets are connected and in their handshakes (util/socket.h).
class SocketNetConnecting {
 public:
  // Connects the control socket and nSocks data sockets. Blocking only for TCP's own connect,
  // which a listening peer's kernel completes without the peer's help, so two ranks that connect
  // to each other before accepting do not deadlock.
  [[nodiscard]] static ncclResult_t start(const SocketNetHandle& handle, int nSocks,
                                          std::unique_ptr<SocketNetConnecting>* out);
  // Non-blocking: moves the handshakes on (the peer's listener answers them as it accepts); once
  // all are done, sends each socket's hello and sets *out. Fails when one is refused or after 30 s.
  [[nodiscard]] ncclResult_t progress(std::unique_ptr<SocketNetConn>* out);
  // Waits up to `ms` for any socket still in its handshake to have data.
  void wait(int ms) const;

 private:
  std::vector<SocketConnector> connectors_;  // [0] control, [1..nSocks] data
  uint64_t connId_ = 0;
  std::string peer_;
  Deadline deadline_;
};

// Connects and waits for the handshakes; `pump`, if given, runs between waits (a test whose
// listener lives in the same thread progresses it there).
[[nodiscard]] ncclResult_t socketNetConnect(const SocketNetHandle& handle, int nSocks,
                                            std::unique_ptr<SocketNetConn>* out,
                                            const std::function<ncclResult_t()>& pump = {});

// Data sockets per connection: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD (NCCL_NSOCKS_PERTHREAD
// when there are no helper threads), within 1..kSocketNetMaxSocks.
int socketNetSocksPerConn();
// Helper threads per connection end (net/data_sockets.h): NCCL_SOCKET_NTHREADS within 0..16.
int socketNetThreadsPerConn();

}  // namespace braid::net
