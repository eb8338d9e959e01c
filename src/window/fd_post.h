// cuMem file descriptors between the processes of one host, for window registrations: each rank
// binds one Unix datagram socket for the life of its window manager (transport/uds.h) and names it
// in its offers. A datagram carries the registration's serial and the sender's rank, so that a
// descriptor of a registration that failed half-way is recognized and dropped later.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "transport/uds.h"
#include "util/socket.h"
#include "util/unique_fd.h"

namespace braid::window {

class FdPost {
 public:
  // Binds the socket (its name tells this communicator, rank and process apart).
  [[nodiscard]] ncclResult_t open(uint64_t commHash, int rank);
  const std::string& name() const { return socket_.name(); }

  // Sends `fd` for registration `serial` to the socket `dest`; drains this rank's own socket while
  // the peer's queue is full (the peers send to this rank at the same time).
  [[nodiscard]] ncclResult_t send(const std::string& dest, int fd, uint64_t serial, int fromRank,
                                  const Deadline& deadline, const std::string& what);
  // Waits for the descriptor of registration `serial` from `fromRank`.
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
  // Keeps a received descriptor of the current (or a later) registration; drops older ones.
  void keep(const Note& note, UniqueFd fd, uint64_t serial);
  [[nodiscard]] ncclResult_t drain(uint64_t serial, const std::string& what);

  transport::UdsSocket socket_;
  uint64_t commHash_ = 0;
  std::vector<std::pair<Note, UniqueFd>> early_;
};

}  // namespace braid::window
