// File descriptors passed between processes of one host: abstract Unix datagram sockets with
// SCM_RIGHTS. No CUDA here, so it is tested on any machine.
//
// Datagrams, not streams: a sender never waits for the receiver to accept or read (the kernel
// queues the datagram and keeps the passed file open while it is in flight), so two ranks that pass
// each other descriptors at the same time cannot deadlock, and a receiver serves every peer with
// one socket. The receiver must have bound its name before anyone sends to it; a missing name is
// an error (the peer is gone), not something to wait for. Anyone on the host (in the same network
// namespace) can send to an abstract name, so receivers check each datagram's size and content and
// drop what they do not expect.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "util/socket.h"
#include "util/unique_fd.h"

namespace braid::transport {

// "braid-uds-<commHash hex>-<rank>-<pid>-<serial>": the abstract name (without its leading NUL) of
// the socket a rank binds for one connect. The pid and a per-process serial keep communicators
// with the same hash, and successive connects of one communicator, apart.
std::string udsSocketName(uint64_t commHash, int rank, int pid, uint64_t serial);
// A serial no other socket of this process has used (for udsSocketName).
uint64_t nextUdsSerial();

class UdsSocket {
 public:
  UdsSocket() = default;
  UdsSocket(UdsSocket&&) noexcept = default;
  UdsSocket& operator=(UdsSocket&&) noexcept = default;

  bool valid() const { return fd_.valid(); }
  const std::string& name() const { return name_; }

  // Binds a datagram socket to the abstract address `name` (at most 100 bytes). `what` names the
  // owner in messages ("rank 3").
  [[nodiscard]] static ncclResult_t bind(const std::string& name, const std::string& what, UdsSocket* out);

  // Sends one datagram with `payload` and `fd` attached to the socket bound at `dest`; retries
  // while the receiver's queue is full, until the deadline, calling `whileFull` (when given)
  // before each retry. A receive queue holds only net.unix.max_dgram_qlen datagrams (10 by
  // default), so ranks that all send to each other at once must drain their own socket there
  // (tryRecvFd), or every rank waits on a full peer and none reads. `what` describes the transfer
  // for messages. The caller may close `fd` as soon as this returns.
  [[nodiscard]] ncclResult_t sendFd(const std::string& dest, int fd, const void* payload, size_t bytes,
                                    const Deadline& deadline, const std::string& what,
                                    const std::function<ncclResult_t()>& whileFull = nullptr) const;

  // recvFd without waiting: *got says whether a datagram was taken.
  [[nodiscard]] ncclResult_t tryRecvFd(void* payload, size_t bytes, UniqueFd* fd, const std::string& what,
                                       bool* got) const;

  // Waits for the next datagram of exactly `bytes` bytes that carries one descriptor; others are
  // dropped (with their descriptors closed). The received descriptor is close-on-exec.
  [[nodiscard]] ncclResult_t recvFd(void* payload, size_t bytes, UniqueFd* fd, const Deadline& deadline,
                                    const std::string& what) const;

 private:
  UniqueFd fd_;
  std::string name_;
};

}  // namespace braid::transport
