// Bootstrap operations over direct connections (the model is described in bootstrap_impl.h).
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <new>
#include <string>

#include "bootstrap/bootstrap_impl.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {

namespace {

constexpr uint64_t kMaxQueuedBytes = kBootstrapMaxQueuedBytes;
// Payload buffers start this small and double as bytes arrive.
constexpr size_t kFirstPayloadChunk = 64 << 10;

}  // namespace

BootstrapImpl::BootstrapImpl(int rank, int nranks, uint64_t commMagic, SocketAcceptor acceptor,
                             std::chrono::milliseconds timeout, const std::atomic<int>* abortFlag)
    : Bootstrap(rank, nranks),
      commMagic_(commMagic),
      acceptor_(std::move(acceptor)),
      timeout_(timeout),
      abortFlag_(abortFlag),
      peers_(static_cast<size_t>(nranks)),
      out_(static_cast<size_t>(nranks)),
      in_(static_cast<size_t>(nranks)) {
  peers_[static_cast<size_t>(rank)] = acceptor_.listener().localAddress();
}

ncclResult_t BootstrapImpl::exchangeAddresses(const SocketAddress& next) {
  int nextRank = (rank() + 1) % nranks();
  peers_[static_cast<size_t>(nextRank)] = next;
  std::vector<SocketAddress> all(static_cast<size_t>(nranks()));
  all[static_cast<size_t>(rank())] = acceptor_.listener().localAddress();
  NCCLCHECK(ringAllGather(all.data(), sizeof(SocketAddress), "create (exchange of addresses)"));
  peers_ = std::move(all);
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::checkPeer(int peer, const char* op) const {
  if (peer < 0 || peer >= nranks()) {
    WARN("Rank %d of %d: bootstrap %s with rank %d, which is not in [0, %d)", rank(), nranks(), op, peer, nranks());
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::checkWait(const Deadline& deadline, const char* op, const char* waitingFor,
                                      int peer) const {
  if (deadline.aborted()) {
    INFO(kLogBootstrap, "Rank %d of %d: bootstrap %s aborted while %s rank %d", rank(), nranks(), op, waitingFor, peer);
    return ncclInternalError;
  }
  if (deadline.expired()) {
    WARN(
        "Rank %d of %d: bootstrap %s timed out after %.3g s %s rank %d (it failed, exited, or is stuck elsewhere; "
        "NCCL_BOOTSTRAP_TIMEOUT sets the limit)",
        rank(), nranks(), op, deadline.timeoutSeconds(), waitingFor, peer);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::progress(const Deadline& deadline, const Socket* sending, int readFd) {
  pollFds_.clear();
  pollPeers_.clear();
  acceptor_.addPollFds(&pollFds_);
  size_t firstPeer = pollFds_.size();
  for (int p = 0; p < nranks(); ++p) {
    if (in_[static_cast<size_t>(p)].socket.valid()) {
      pollFds_.push_back(pollfd{in_[static_cast<size_t>(p)].socket.fd(), POLLIN, 0});
      pollPeers_.push_back(p);
    }
  }
  if (sending != nullptr) pollFds_.push_back(pollfd{sending->fd(), POLLOUT, 0});
  if (readFd >= 0) pollFds_.push_back(pollfd{readFd, POLLIN, 0});
  if (::poll(pollFds_.data(), pollFds_.size(), deadline.sliceMs()) < 0 && errno != EINTR) {
    int err = errno;
    WARN("Rank %d of %d: poll() on bootstrap sockets failed: %s (errno %d)", rank(), nranks(), strerror(err), err);
    return ncclSystemError;
  }
  NCCLCHECK(acceptor_.progress());
  AcceptedConnection conn;
  while (acceptor_.takeReady(&conn)) NCCLCHECK(adopt(std::move(conn)));
  for (size_t i = 0; i < pollPeers_.size(); ++i) {
    if (pollFds_[firstPeer + i].revents != 0) NCCLCHECK(readAvailable(pollPeers_[i]));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::adopt(AcceptedConnection conn) {
  PeerHello hello{};
  std::string from = socketAddressToString(conn.socket.peerAddress());
  std::string why;
  if (parsePeerHello(reinterpret_cast<const uint8_t*>(conn.hello.data()), conn.hello.size(), rank(), nranks(), &hello,
                     &why) != ncclSuccess) {
    WARN(
        "Rank %d of %d: inconsistent bootstrap connection from %s: %s; every rank must use the same Braid library "
        "and nranks",
        rank(), nranks(), from.c_str(), why.c_str());
    return ncclInvalidUsage;
  }
  Inbound& slot = in_[static_cast<size_t>(hello.rank)];
  if (slot.socket.valid()) {
    WARN("Rank %d of %d: second bootstrap connection from rank %d (%s); two processes may claim rank %d", rank(),
         nranks(), hello.rank, from.c_str(), hello.rank);
    return ncclInternalError;
  }
  conn.socket.setDescription("rank " + std::to_string(hello.rank) + " of " + std::to_string(nranks()));
  slot = Inbound{};
  slot.socket = std::move(conn.socket);
  return ncclSuccess;
}

bool BootstrapImpl::Posted::matches(int from, const PeerMsgHeader& header) const {
  return active && peer == from && static_cast<uint32_t>(kind) == header.kind && tag == header.tag;
}

ncclResult_t BootstrapImpl::checkHeader(int peer, const PeerMsgHeader& received) {
  PeerMsgHeader header{};
  std::string why;
  if (parsePeerMsgHeader(reinterpret_cast<const uint8_t*>(&received), sizeof(received), &header, &why) != ncclSuccess) {
    WARN("Rank %d of %d: corrupted bootstrap message header from rank %d (%s, %" PRIu64 " bytes)", rank(), nranks(),
         peer, why.c_str(), received.bytes);
    return ncclInternalError;
  }
  Posted& p = posted_;
  if (p.matches(peer, header)) {
    // This message is the receive's; a later one with the same tag is for a later receive.
    p.active = false;
    if (header.bytes == p.bytes) return ncclSuccess;
    WARN("Rank %d of %d: bootstrap %s: rank %d sent %" PRIu64 " bytes but this rank expects %zu%s", rank(), nranks(),
         p.op, peer, header.bytes, p.bytes, header.bytes > p.bytes ? " (message truncated)" : "");
    return ncclInvalidUsage;
  }
  if (!peerMsgFitsQueue(header.bytes, queuedBytes_)) {
    WARN("Rank %d of %d: rank %d sent a bootstrap message of %" PRIu64
         " bytes (kind %u, tag %d) that no receive "
         "waits for, with %zu bytes queued already: more than the %" PRIu64
         " bytes this rank holds for early "
         "messages; refused",
         rank(), nranks(), peer, header.bytes, header.kind, header.tag, queuedBytes_, kMaxQueuedBytes);
    return ncclInternalError;
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::readPayload(Inbound* in, bool* closed) {
  std::vector<char>& data = in->message.data;
  const size_t bytes = static_cast<size_t>(in->header.bytes);
  while (in->payloadGot < bytes && !*closed) {
    if (in->payloadGot == data.size()) {
      const size_t grown = std::min(bytes, std::max(kFirstPayloadChunk, 2 * data.size()));
      try {
        data.resize(grown);
      } catch (const std::bad_alloc&) {
        WARN("Rank %d of %d: out of memory receiving a %zu-byte bootstrap message from rank %d", rank(), nranks(),
             bytes, in->message.peer);
        return ncclSystemError;
      }
    }
    const size_t before = in->payloadGot;
    NCCLCHECK(in->socket.recvSome(data.data(), data.size(), &in->payloadGot, closed));
    if (in->payloadGot == before) break;  // would block
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::readAvailable(int peer) {
  Inbound& in = in_[static_cast<size_t>(peer)];
  for (;;) {
    bool closed = false;
    if (in.headerGot < sizeof(in.header)) {
      NCCLCHECK(in.socket.recvSome(&in.header, sizeof(in.header), &in.headerGot, &closed));
      if (in.headerGot == sizeof(in.header)) {
        const ncclResult_t bad = checkHeader(peer, in.header);
        if (bad != ncclSuccess) {
          // The payload is not read, so the stream is out of step: nothing more can come from it.
          in.socket.close();
          in.closed = true;
          return bad;
        }
        in.message = Message{peer, static_cast<PeerMsgKind>(in.header.kind), in.header.tag, {}};
        in.payloadGot = 0;
        queuedBytes_ += static_cast<size_t>(in.header.bytes);
      }
    }
    if (in.headerGot == sizeof(in.header) && !closed) {
      NCCLCHECK(readPayload(&in, &closed));
      if (in.payloadGot == in.header.bytes) {
        queue_.push_back(std::move(in.message));
        in.headerGot = 0;
        continue;  // there may be more
      }
    }
    if (closed) {
      if (in.headerGot != 0) {
        WARN(
            "Rank %d of %d: rank %d closed its bootstrap connection in the middle of a message (%zu of %zu header "
            "bytes, %zu of %zu payload bytes): it exited or aborted",
            rank(), nranks(), peer, in.headerGot, sizeof(in.header), in.payloadGot,
            in.headerGot == sizeof(in.header) ? static_cast<size_t>(in.header.bytes) : size_t{0});
        return ncclRemoteError;
      }
      // Data always comes before the end of stream, so every message it sent is queued already.
      TRACE(kLogBootstrap, "Rank %d of %d: rank %d closed its bootstrap connection", rank(), nranks(), peer);
      in.socket.close();
      in.closed = true;
    }
    return ncclSuccess;
  }
}

bool BootstrapImpl::takeMessage(int peer, PeerMsgKind kind, int tag, Message* out) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->peer == peer && it->kind == kind && it->tag == tag) {
      *out = std::move(*it);
      queue_.erase(it);
      queuedBytes_ -= std::min(queuedBytes_, out->data.size());
      return true;
    }
  }
  return false;
}

ncclResult_t BootstrapImpl::connectTo(int peer, const Deadline& deadline) {
  const SocketAddress& addr = peers_[static_cast<size_t>(peer)];
  if (!socketAddressIsValid(addr)) {
    WARN("Rank %d of %d: the bootstrap address of rank %d is not known yet", rank(), nranks(), peer);
    return ncclInternalError;
  }
  std::string name = "rank " + std::to_string(peer) + " of " + std::to_string(nranks());
  // Its listener exists since before its address was published: a refusal means it is gone.
  // The peer may be connecting to this rank at the same time: keep accepting while its acceptor
  // has not answered the handshake.
  const SocketPump pump = [this, &deadline](int fd) { return progress(deadline, nullptr, fd); };
  NCCLCHECK(Socket::connect(addr, commMagic_, SocketType::kBootstrap, name, /*retryRefused=*/false, deadline,
                            &out_[static_cast<size_t>(peer)], pump));
  PeerHello hello{kBootstrapProtocol, rank(), nranks(), 0};
  return writeAll(peer, &hello, sizeof(hello), deadline, "connect");
}

ncclResult_t BootstrapImpl::writeAll(int peer, const void* data, size_t bytes, const Deadline& deadline,
                                     const char* op) {
  Socket& sock = out_[static_cast<size_t>(peer)];
  size_t done = 0;
  for (;;) {
    NCCLCHECK(sock.sendSome(data, bytes, &done));
    if (done == bytes) return ncclSuccess;
    NCCLCHECK(checkWait(deadline, op, "sending to", peer));
    NCCLCHECK(progress(deadline, &sock));
  }
}

ncclResult_t BootstrapImpl::sendTo(int peer, PeerMsgKind kind, int tag, const void* data, size_t bytes,
                                   const char* op) {
  NCCLCHECK(checkPeer(peer, op));
  if (peer == rank()) {
    const char* p = static_cast<const char*>(data);
    queue_.push_back(Message{peer, kind, tag, std::vector<char>(p, p + bytes)});
    queuedBytes_ += bytes;
    return ncclSuccess;
  }
  Deadline deadline = opDeadline();
  if (!out_[static_cast<size_t>(peer)].valid()) NCCLCHECK(connectTo(peer, deadline));
  PeerMsgHeader header{static_cast<uint32_t>(kind), tag, bytes};
  NCCLCHECK(writeAll(peer, &header, sizeof(header), deadline, op));
  return writeAll(peer, data, bytes, deadline, op);
}

ncclResult_t BootstrapImpl::recvFrom(int peer, PeerMsgKind kind, int tag, void* data, size_t bytes, const char* op) {
  NCCLCHECK(checkPeer(peer, op));
  Deadline deadline = opDeadline();
  Message message;
  // Cleared on every return: a message that arrives with no receive waiting is checked against
  // the queue's bound instead.
  struct PostedScope {
    Posted* p;
    ~PostedScope() { p->active = false; }
  } scope{&posted_};
  posted_ = Posted{true, peer, kind, tag, bytes, op};
  // A matching message whose header is in already (its payload still coming) is this receive's.
  const Inbound& from = in_[static_cast<size_t>(peer)];
  if (from.headerGot == sizeof(from.header) && posted_.matches(peer, from.header)) posted_.active = false;
  while (!takeMessage(peer, kind, tag, &message)) {
    if (in_[static_cast<size_t>(peer)].closed) {
      WARN(
          "Rank %d of %d: rank %d closed its bootstrap connection while this rank waited in %s for it (it exited, "
          "aborted or failed)",
          rank(), nranks(), peer, op);
      return ncclRemoteError;
    }
    NCCLCHECK(checkWait(deadline, op, "waiting for", peer));
    NCCLCHECK(progress(deadline, nullptr));
  }
  if (message.data.size() != bytes) {
    WARN("Rank %d of %d: bootstrap %s: rank %d sent %zu bytes but this rank expects %zu%s", rank(), nranks(), op, peer,
         message.data.size(), bytes, message.data.size() > bytes ? " (message truncated)" : "");
    return ncclInvalidUsage;
  }
  if (bytes > 0) std::memcpy(data, message.data.data(), bytes);
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::allGather(void* data, size_t bytesPerRank) {
  return ringAllGather(data, bytesPerRank, "allGather");
}

ncclResult_t BootstrapImpl::ringAllGather(void* data, size_t bytesPerRank, const char* op) {
  // Ring: at step s each rank forwards the slot it received at step s-1 (its own first) to the next
  // rank and receives slot rank-s-1 from the previous one; n-1 steps fill every slot. The tag is
  // the slot number, which also checks that the ring stays in step.
  int n = nranks();
  int next = (rank() + 1) % n;
  int prev = (rank() + n - 1) % n;
  char* slots = static_cast<char*>(data);
  for (int step = 0; step < n - 1; ++step) {
    int sendSlot = (rank() - step + n) % n;
    int recvSlot = (rank() - step - 1 + n) % n;
    NCCLCHECK(sendTo(next, PeerMsgKind::kAllGather, sendSlot, slots + static_cast<size_t>(sendSlot) * bytesPerRank,
                     bytesPerRank, op));
    NCCLCHECK(recvFrom(prev, PeerMsgKind::kAllGather, recvSlot, slots + static_cast<size_t>(recvSlot) * bytesPerRank,
                       bytesPerRank, op));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::barrier() {
  // Dissemination: in round k every rank signals rank+2^k and waits for rank-2^k; after
  // ceil(log2 n) rounds each rank has heard, directly or not, from every other one.
  int n = nranks();
  for (int distance = 1; distance < n; distance <<= 1) {
    NCCLCHECK(sendTo((rank() + distance) % n, PeerMsgKind::kBarrier, distance, nullptr, 0, "barrier"));
    NCCLCHECK(recvFrom((rank() - distance + n) % n, PeerMsgKind::kBarrier, distance, nullptr, 0, "barrier"));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::broadcast(void* data, size_t bytes, int root) {
  NCCLCHECK(checkPeer(root, "broadcast root"));
  if (rank() != root) return recvFrom(root, PeerMsgKind::kBroadcast, root, data, bytes, "broadcast");
  for (int peer = 0; peer < nranks(); ++peer) {
    if (peer != root) NCCLCHECK(sendTo(peer, PeerMsgKind::kBroadcast, root, data, bytes, "broadcast"));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::send(int peer, int tag, const void* data, size_t bytes) {
  std::string op = "send (tag " + std::to_string(tag) + ")";
  return sendTo(peer, PeerMsgKind::kUser, tag, data, bytes, op.c_str());
}

ncclResult_t BootstrapImpl::recv(int peer, int tag, void* data, size_t bytes) {
  std::string op = "recv (tag " + std::to_string(tag) + ")";
  return recvFrom(peer, PeerMsgKind::kUser, tag, data, bytes, op.c_str());
}

}  // namespace braid
