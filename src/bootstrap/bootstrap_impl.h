// The Bootstrap implementation: a rank's listener and its direct connections to the other ranks.
// Internal to src/bootstrap (bootstrap.cc creates it, bootstrap_ops.cc implements the operations).
//
// Messaging model: each ordered pair of ranks uses at most one TCP connection, opened by the
// sender on its first message and kept until the Bootstrap is destroyed, so messages between two
// ranks arrive in order. Every message carries (kind, tag); a receive takes the oldest queued
// message from its peer with the same kind and tag, reading the connections (and accepting new
// ones) until it arrives; incoming bytes are read as they come, whatever the caller waits for. A send that cannot
// complete at once keeps reading incoming messages meanwhile, so two ranks that send each other large messages at the
// same time do not deadlock. Not thread safe: one caller at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/wire.h"
#include "util/socket.h"

namespace braid {

class BootstrapImpl final : public Bootstrap {
 public:
  BootstrapImpl(int rank, int nranks, uint64_t commMagic, SocketAcceptor acceptor, std::chrono::milliseconds timeout,
                const std::atomic<int>* abortFlag);

  // Completes create(): with the next rank's listener known (from the root), gathers every
  // rank's listener address over the ring so that any two ranks can talk.
  [[nodiscard]] ncclResult_t exchangeAddresses(const SocketAddress& next);

  [[nodiscard]] ncclResult_t allGather(void* data, size_t bytesPerRank) override;
  [[nodiscard]] ncclResult_t barrier() override;
  [[nodiscard]] ncclResult_t broadcast(void* data, size_t bytes, int root) override;
  [[nodiscard]] ncclResult_t send(int peer, int tag, const void* data, size_t bytes) override;
  [[nodiscard]] ncclResult_t recv(int peer, int tag, void* data, size_t bytes) override;

 private:
  struct Message {
    int peer;
    PeerMsgKind kind;
    int tag;
    std::vector<char> data;
  };
  // A rank's connection to us and the message being read from it. Messages are read as bytes
  // arrive, never by blocking on one peer: two ranks that both wait for each other's message to
  // drain while sending would deadlock otherwise.
  struct Inbound {
    Socket socket;
    bool closed = false;  // the rank closed it (exited or destroyed its Bootstrap)
    PeerMsgHeader header{};
    size_t headerGot = 0;
    Message message{};
    size_t payloadGot = 0;
  };

  [[nodiscard]] ncclResult_t ringAllGather(void* data, size_t bytesPerRank, const char* op);
  // `op` names the operation in messages ("allGather", "send (tag 7)").
  [[nodiscard]] ncclResult_t sendTo(int peer, PeerMsgKind kind, int tag, const void* data, size_t bytes,
                                    const char* op);
  [[nodiscard]] ncclResult_t recvFrom(int peer, PeerMsgKind kind, int tag, void* data, size_t bytes, const char* op);
  [[nodiscard]] ncclResult_t checkPeer(int peer, const char* op) const;
  [[nodiscard]] ncclResult_t connectTo(int peer, const Deadline& deadline);
  [[nodiscard]] ncclResult_t writeAll(int peer, const void* data, size_t bytes, const Deadline& deadline,
                                      const char* op);
  // Waits up to one poll slice, then accepts new connections and files arrived messages. Also
  // wakes when `sending` can take more data, or when `readFd` (>= 0; a connection in its
  // handshake) has data.
  [[nodiscard]] ncclResult_t progress(const Deadline& deadline, const Socket* sending, int readFd = -1);
  [[nodiscard]] ncclResult_t adopt(AcceptedConnection conn);
  // Reads whatever has arrived from `peer` and queues the messages it completes.
  [[nodiscard]] ncclResult_t readAvailable(int peer);
  // Checks a header that just arrived from `peer` against what this rank can need, before any
  // byte is allocated for it: a message for the receive being waited for must have its size; any
  // other message (it arrived before its receive was posted) must fit kMaxQueuedBytes with what is
  // queued already.
  [[nodiscard]] ncclResult_t checkHeader(int peer, const PeerMsgHeader& received);
  // Reads payload into in->message, growing it only as bytes arrive (a header's claim costs
  // nothing until the bytes come).
  [[nodiscard]] ncclResult_t readPayload(Inbound* in, bool* closed);
  bool takeMessage(int peer, PeerMsgKind kind, int tag, Message* out);
  // ncclSuccess while the deadline holds; the abort or timeout result otherwise.
  [[nodiscard]] ncclResult_t checkWait(const Deadline& deadline, const char* op, const char* waitingFor,
                                       int peer) const;
  Deadline opDeadline() const { return Deadline::after(timeout_, abortFlag_); }

  // The receive recvFrom waits for, so that its message is checked against its size on arrival.
  struct Posted {
    bool active = false;
    int peer = -1;
    PeerMsgKind kind = PeerMsgKind::kUser;
    int tag = 0;
    size_t bytes = 0;
    const char* op = "";
    // Whether a message with this header from `from` is the one this receive waits for.
    bool matches(int from, const PeerMsgHeader& header) const;
  };

  uint64_t commMagic_;
  SocketAcceptor acceptor_;
  std::chrono::milliseconds timeout_;
  const std::atomic<int>* abortFlag_;
  std::vector<SocketAddress> peers_;  // every rank's listener
  std::vector<Socket> out_;           // our connection to each rank, once used
  std::vector<Inbound> in_;           // each rank's connection to us, once accepted
  std::deque<Message> queue_;         // arrived, not yet received
  size_t queuedBytes_ = 0;            // payload bytes in queue_ and in messages being read
  Posted posted_;
  std::vector<pollfd> pollFds_;  // scratch for progress()
  std::vector<int> pollPeers_;
};

}  // namespace braid
