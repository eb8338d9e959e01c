#include "window/fd_post.h"

#include <unistd.h>

#include <cstddef>
#include <utility>

#include "util/check.h"
#include "util/log.h"

namespace braid::window {
namespace {

constexpr uint64_t kNoteMagic = 0x425257494e464421ull;  // "BRWINFD!"

}  // namespace

ncclResult_t FdPost::open(uint64_t commHash, int rank, std::vector<transport::UdsSender> senders) {
  commHash_ = commHash;
  const std::string name = transport::udsSocketName(commHash ^ 0x57494e44ull, rank, static_cast<int>(::getpid()),
                                                    transport::nextUdsSerial());
  return transport::UdsSocket::bind(name, "window registration (rank " + std::to_string(rank) + ")", std::move(senders),
                                    &socket_);
}

transport::FdInbox::Round FdPost::expect(uint64_t serial, const std::vector<int>& fromRanks) {
  inbox_.clear();
  for (int rank : fromRanks) inbox_.expect(transport::FdKey{rank, serial, 0});
  return transport::FdInbox::Round(&inbox_);
}

void FdPost::keep(const Note& note, UniqueFd fd) {
  if (note.magic != kNoteMagic || note.commHash != commHash_ ||
      !inbox_.offer(transport::FdKey{note.fromRank, note.serial, 0}, std::move(fd))) {
    INFO(kLogInit | kLogAlloc, "window registration: dropped a stale, unexpected or foreign file descriptor datagram");
  }
}

ncclResult_t FdPost::drain(const std::string& what) {
  while (true) {
    Note note{};
    UniqueFd fd;
    bool got = false;
    NCCLCHECK(socket_.tryRecvFd(&note, sizeof(note), offsetof(Note, fromRank), &fd, what, &got));
    if (!got) return ncclSuccess;
    keep(note, std::move(fd));
  }
}

ncclResult_t FdPost::send(const std::string& dest, int fd, uint64_t serial, int fromRank, const Deadline& deadline,
                          const std::string& what) {
  Note note{kNoteMagic, commHash_, serial, fromRank, 0};
  return socket_.sendFd(dest, fd, &note, sizeof(note), deadline, what, [this, what] { return drain(what); });
}

ncclResult_t FdPost::take(uint64_t serial, int fromRank, const Deadline& deadline, const std::string& what,
                          UniqueFd* out) {
  const transport::FdKey key{fromRank, serial, 0};
  while (!inbox_.take(key, out)) {
    Note note{};
    UniqueFd fd;
    NCCLCHECK(socket_.recvFd(&note, sizeof(note), offsetof(Note, fromRank), &fd, deadline, what));
    keep(note, std::move(fd));
  }
  return ncclSuccess;
}

}  // namespace braid::window
