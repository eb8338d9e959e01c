// What any process of the host may send to a rank's Unix datagram socket (the transport's and the
// registrations' descriptor exchange): a datagram of any size with any number of descriptors. The
// harness sends the input as one datagram to a socket bound by the real UdsSocket and receives it
// with UdsSocket::tryRecvFd, as the library does. Input: byte 0 = descriptors attached (0-6, more
// than the receiver's control buffer holds), byte 1 = payload size the receiver expects (0-63),
// the rest = the datagram's payload. Accepted: exactly that size with exactly one descriptor;
// anything else is dropped with every descriptor closed (none leaks).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "transport/uds.h"

namespace {

int openFds() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) n += ::fcntl(fd, F_GETFD) != -1 ? 1 : 0;
  return n;
}

bool sendDatagram(const std::string& dest, const uint8_t* payload, size_t bytes, int nFds) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, dest.data(), dest.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + dest.size());
  std::vector<int> fds;
  for (int i = 0; i < nFds; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  uint8_t empty = 0;
  iovec iov{bytes > 0 ? const_cast<uint8_t*>(payload) : &empty, bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nFds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<size_t>(nFds));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<size_t>(nFds));
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * static_cast<size_t>(nFds));
  }
  const int sender = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool sent = sender >= 0 && ::sendmsg(sender, &msg, 0) == static_cast<ssize_t>(bytes);
  if (sender >= 0) ::close(sender);
  for (int fd : fds) ::close(fd);
  return sent;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static braid::transport::UdsSocket receiver = [] {
    braid::transport::UdsSocket s;
    const std::string name = "braid-fuzz-uds-" + std::to_string(::getpid());
    FUZZ_CHECK(braid::transport::UdsSocket::bind(name, "fuzz receiver", &s) == ncclSuccess);
    return s;
  }();
  if (data == nullptr || size < 2) return 0;
  const int nFds = data[0] % 7;
  const size_t expected = data[1] % 64;
  const uint8_t* payload = data + 2;
  const size_t bytes = size - 2;
  const int before = openFds();
  if (!sendDatagram(receiver.name(), payload, bytes, nFds)) return 0;  // too large for a datagram
  std::vector<uint8_t> buffer(expected + 1, 0xa5);
  braid::UniqueFd fd;
  bool got = false;
  FUZZ_CHECK(receiver.tryRecvFd(buffer.data(), expected, &fd, "fuzz", &got) == ncclSuccess);
  FUZZ_CHECK(got == (bytes == expected && nFds == 1));
  FUZZ_CHECK(buffer[expected] == 0xa5);  // nothing written past the receive's size
  if (got) {
    FUZZ_CHECK(fd.valid());
    FUZZ_CHECK(bytes == 0 || std::memcmp(buffer.data(), payload, bytes) == 0);
  }
  fd.reset();
  FUZZ_CHECK(openFds() == before);  // every descriptor of a dropped datagram was closed
  return 0;
}
