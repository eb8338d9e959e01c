// cuMem file descriptors between the processes of one host, for window registrations: each rank
// binds one Unix datagram socket for the life of its window manager (transport/uds.h) and names it
// in its offers. Like the transports' sockets, it accepts datagrams only from the processes of the
// communicator's ranks on this host (the kernel's word on the sender, uds.h). A datagram carries the
// registration's serial and the sender's rank; only the descriptors a registration expects are kept
// (one per peer in another process, FdInbox), so a descriptor of a registration that failed
// half-way, or one nobody asked for, is closed at once, and what is held never exceeds the team.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transport/uds.h"
#include "util/socket.h"
#include "util/unique_fd.h"

namespace braid::window {

class FdPost {
 public:
  // Binds the socket (its name tells this communicator, rank and process apart); only `senders`
  // may send to it.
  [[nodiscard]] ncclResult_t open(uint64_t commHash, int rank, std::vector<transport::UdsSender> senders);
  const std::string& name() const { return socket_.name(); }

  // Sends `fd` for registration `serial` to the socket `dest`; drains this rank's own socket while
  // the peer's queue is full (the peers send to this rank at the same time).
  [[nodiscard]] ncclResult_t send(const std::string& dest, int fd, uint64_t serial, int fromRank,
                                  const Deadline& deadline, const std::string& what);
  // Starts registration `serial`'s exchange: one descriptor from each of `fromRanks` is expected
  // until the returned round ends (every other is closed when it arrives). Before any send or take.
  [[nodiscard]] transport::FdInbox::Round expect(uint64_t serial, const std::vector<int>& fromRanks);
  // Waits for the descriptor of registration `serial` from `fromRank` (expected).
  [[nodiscard]] ncclResult_t take(uint64_t serial, int fromRank, const Deadline& deadline, const std::string& what,
                                  UniqueFd* out);

 private:
  struct Note {
    uint64_t magic;
    uint64_t commHash;
    uint64_t serial;
    int32_t fromRank;
    int32_t pad;
  };
  // Keeps a received descriptor if the current registration expects it; closes it otherwise.
  void keep(const Note& note, UniqueFd fd);
  [[nodiscard]] ncclResult_t drain(const std::string& what);

  transport::UdsSocket socket_;
  uint64_t commHash_ = 0;
  transport::FdInbox inbox_;
};

}  // namespace braid::window
