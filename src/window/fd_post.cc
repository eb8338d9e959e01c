#include "window/fd_post.h"

#include <unistd.h>

#include "util/check.h"
#include "util/log.h"

namespace braid::window {
namespace {

constexpr uint64_t kNoteMagic = 0x425257494e464421ull;  // "BRWINFD!"
// Descriptors kept for registrations not asked for yet: a bound, so that a flood of datagrams
// from anyone on the host cannot exhaust this process's descriptors.
constexpr size_t kMaxEarly = 1024;

}  // namespace

ncclResult_t FdPost::open(uint64_t commHash, int rank) {
  commHash_ = commHash;
  const std::string name = transport::udsSocketName(commHash ^ 0x57494e44ull, rank, static_cast<int>(::getpid()),
                                                    transport::nextUdsSerial());
  return transport::UdsSocket::bind(name, "window registration (rank " + std::to_string(rank) + ")", &socket_);
}

void FdPost::keep(const Note& note, UniqueFd fd, uint64_t serial) {
  if (note.magic != kNoteMagic || note.commHash != commHash_ || note.serial < serial || early_.size() >= kMaxEarly) {
    INFO(kLogInit | kLogAlloc, "window registration: dropped a stale or foreign file descriptor datagram");
    return;
  }
  early_.emplace_back(note, std::move(fd));
}

ncclResult_t FdPost::drain(uint64_t serial, const std::string& what) {
  while (true) {
    Note note{};
    UniqueFd fd;
    bool got = false;
    NCCLCHECK(socket_.tryRecvFd(&note, sizeof(note), &fd, what, &got));
    if (!got) return ncclSuccess;
    keep(note, std::move(fd), serial);
  }
}

ncclResult_t FdPost::send(const std::string& dest, int fd, uint64_t serial, int fromRank, const Deadline& deadline,
                          const std::string& what) {
  Note note{kNoteMagic, commHash_, serial, fromRank, 0};
  return socket_.sendFd(dest, fd, &note, sizeof(note), deadline, what,
                        [this, serial, what] { return drain(serial, what); });
}

ncclResult_t FdPost::take(uint64_t serial, int fromRank, const Deadline& deadline, const std::string& what,
                          UniqueFd* out) {
  while (true) {
    for (auto it = early_.begin(); it != early_.end();) {
      if (it->first.serial < serial) {
        it = early_.erase(it);  // a registration that failed half-way
        continue;
      }
      if (it->first.serial == serial && it->first.fromRank == fromRank) {
        *out = std::move(it->second);
        early_.erase(it);
        return ncclSuccess;
      }
      ++it;
    }
    Note note{};
    UniqueFd fd;
    NCCLCHECK(socket_.recvFd(&note, sizeof(note), &fd, deadline, what));
    keep(note, std::move(fd), serial);
  }
}

}  // namespace braid::window
