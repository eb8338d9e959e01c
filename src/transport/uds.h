// File descriptors passed between processes of one host: abstract Unix datagram sockets with
// SCM_RIGHTS. No CUDA here, so it is tested on any machine.
//
// Datagrams, not streams: a sender never waits for the receiver to accept or read (the kernel
// queues the datagram and keeps the passed file open while it is in flight), so two ranks that pass
// each other descriptors at the same time cannot deadlock, and a receiver serves every peer with
// one socket. The receiver must have bound its name before anyone sends to it; a missing name is
// an error (the peer is gone), not something to wait for.
//
// Who may send. An abstract name has no file and so no permissions: any process of the host (in
// the same network namespace) can send to it. So every socket takes the kernel's word on each
// datagram's sender (SO_PASSCRED: SCM_CREDENTIALS, which a process cannot forge without
// privileges) and accepts a datagram only when
//   - the sender runs as our user (our real or effective uid), and
//   - it is the process of a rank of the job on this host (UdsSender: the pid and pid space each
//     rank published at init), and the rank the payload names is one of that process's ranks.
// A rank in another pid namespace is found through /proc (its pid space and its own pid), while it
// lives: a rank stays alive through the exchange that it sends in. When
// the sender's pid namespace hides it from ours (the kernel reports pid 0), a datagram that names
// a rank of another pid namespace is accepted on the uid alone: nothing finer can be checked.
// Anything else is dropped, every descriptor it carried closed at once, with one WARN (rate
// limited) that names the sender's pid and uid. Payloads that pass are still checked by their
// receivers, which keep only the descriptors they expect (FdInbox).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "util/rank_place.h"
#include "util/socket.h"
#include "util/unique_fd.h"

namespace braid::transport {

// "braid-uds-<commHash hex>-<rank>-<pid>-<serial>": the abstract name (without its leading NUL) of
// the socket a rank binds for one connect. The pid and a per-process serial keep communicators
// with the same hash, and successive connects of one communicator, apart.
std::string udsSocketName(uint64_t commHash, int rank, int pid, uint64_t serial);
// A serial no other socket of this process has used (for udsSocketName).
uint64_t nextUdsSerial();

// A rank whose process may send to a socket, named as it named itself at init (core/peer_info.h).
struct UdsSender {
  int rank;
  int32_t pid;        // in pidSpace
  uint64_t pidSpace;  // util/pid_space.h; 0: unknown
};
// The ranks of `peers` (indexed by rank) on the host of rank `self`, self excepted.
std::vector<UdsSender> udsSendersOf(const std::vector<RankPlace>& peers, int self);

// What the kernel says about a datagram's sender.
struct UdsCredentials {
  bool present = false;  // the datagram came with SCM_CREDENTIALS
  int32_t pid = 0;       // as our pid namespace numbers it; 0: the sender's namespace is hidden from ours
  uint32_t uid = 0;
  uint32_t gid = 0;
};
// The ranks of `senders` whose process `cred` names, this process being in pid space `ownSpace`
// (the uid is not looked at). Ranks in ownSpace (or where a pid space is unknown) match by pid;
// others through /proc (pidSpaceOf, innermostPidOf), or, for a hidden sender (pid 0), every rank
// of another pid space.
std::vector<int> udsSenderRanks(const std::vector<UdsSender>& senders, uint64_t ownSpace, const UdsCredentials& cred);

class UdsSocket {
 public:
  UdsSocket() = default;
  UdsSocket(UdsSocket&&) noexcept = default;
  UdsSocket& operator=(UdsSocket&&) noexcept = default;

  bool valid() const { return fd_.valid(); }
  const std::string& name() const { return name_; }

  // Binds a datagram socket to the abstract address `name` (at most 100 bytes); it accepts
  // datagrams from `senders` only (see above). `what` names the owner in messages ("rank 3").
  [[nodiscard]] static ncclResult_t bind(const std::string& name, const std::string& what,
                                         std::vector<UdsSender> senders, UdsSocket* out);

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
  [[nodiscard]] ncclResult_t tryRecvFd(void* payload, size_t bytes, size_t rankOffset, UniqueFd* fd,
                                       const std::string& what, bool* got) const;

  // Waits for the next datagram of exactly `bytes` bytes that carries one descriptor, from a
  // sender allowed to send it: the int32_t at `rankOffset` in the payload is the rank that claims
  // to send it. Others are dropped (with their descriptors closed). The received descriptor is
  // close-on-exec.
  [[nodiscard]] ncclResult_t recvFd(void* payload, size_t bytes, size_t rankOffset, UniqueFd* fd,
                                    const Deadline& deadline, const std::string& what) const;

 private:
  enum class Received { kNothing, kAccepted, kDropped };
  [[nodiscard]] ncclResult_t receiveOne(void* payload, size_t bytes, size_t rankOffset, UniqueFd* fd,
                                        const std::string& what, Received* result) const;
  // Whether the datagram's sender may send as `claimedRank` (null: as some rank); a rate-limited
  // WARN names it if not.
  bool admits(const UdsCredentials& cred, const int32_t* claimedRank, size_t nFds, const std::string& what) const;

  UniqueFd fd_;
  std::string name_;
  std::vector<UdsSender> senders_;
  uint64_t pidSpace_ = 0;
};

// The descriptors a receiver expects, one per key: it keeps one that arrives for an expected key
// until it is taken, and closes every other (a key not expected, a second one for a key, one for a
// key already taken). So what it holds never exceeds what it expects, whatever anyone sends.
struct FdKey {
  int rank;
  uint64_t a;
  uint64_t b;
  bool operator<(const FdKey& o) const {
    if (rank != o.rank) return rank < o.rank;
    if (a != o.a) return a < o.a;
    return b < o.b;
  }
};
class FdInbox {
 public:
  void expect(const FdKey& key) { slots_.emplace(key, UniqueFd()); }
  // Keeps `fd` if `key` is expected and has none yet; otherwise closes it and returns false.
  bool offer(const FdKey& key, UniqueFd fd);
  // Moves out key's descriptor if it has arrived (the key is then no longer expected).
  bool take(const FdKey& key, UniqueFd* fd);
  size_t held() const;
  size_t expected() const { return slots_.size(); }
  // Forgets every expectation and closes what arrived but was not taken.
  void clear() { slots_.clear(); }

  // Clears the inbox when it ends: the scope of one exchange.
  class Round {
   public:
    explicit Round(FdInbox* inbox) : inbox_(inbox) {}
    ~Round() { inbox_->clear(); }
    Round(const Round&) = delete;
    Round& operator=(const Round&) = delete;

   private:
    FdInbox* inbox_;
  };

 private:
  std::map<FdKey, UniqueFd> slots_;
};

}  // namespace braid::transport
