// What keeps a peer's bytes from hurting the process that reads them, below the bootstrap: the
// log-safe text of peer strings, the thread guard, the rate limit, and the acceptor's cap on
// connections still in their handshake (loopback sockets, threads of this process).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/log.h"
#include "util/rate_limit.h"
#include "util/socket.h"
#include "util/text.h"
#include "util/thread_guard.h"

namespace braid {
namespace {

using std::chrono::milliseconds;
constexpr uint64_t kMagic = 0x5345435552495459ull;

TEST(PeerText, ControlAndHighBytesAreEscaped) {
  EXPECT_EQ(peerText("node-07.cluster"), "node-07.cluster");
  EXPECT_EQ(peerText("evil\n12:00 host:1:1 [0] NCCL WARN forged"), "evil\\x0a12:00 host:1:1 [0] NCCL WARN forged");
  EXPECT_EQ(peerText("\x1b[31mred\r\t\x7f\xff"), "\\x1b[31mred\\x0d\\x09\\x7f\\xff");
  // A fixed field without its NUL stops at the field's end; a NUL ends the text.
  const char field[4] = {'a', 'b', 'c', 'd'};
  EXPECT_EQ(peerText(field, sizeof(field)), "abcd");
  EXPECT_EQ(peerText(std::string_view("ab\0cd", 5)), "ab");
  // Bounded: a long name is cut and marked.
  const std::string longName(1000, 'x');
  EXPECT_EQ(peerText(longName), std::string(kPeerTextMaxBytes, 'x') + "...");
  EXPECT_EQ(peerText(longName, 3), "xxx...");
  EXPECT_EQ(peerText(""), "");
}

TEST(ThreadGuard, ExceptionsBecomeResultsWithOneWarn) {
  // Runs on threads of their own, as the library's threads do: an escaping exception would abort.
  ncclResult_t results[5] = {};
  std::string warns[5];
  std::thread([&] {
    results[0] = guardThread("test", []() -> ncclResult_t { throw std::bad_alloc(); });
    warns[0] = logLastError();
    results[1] = guardThread("test", [] { throw std::runtime_error("bad state"); });
    warns[1] = logLastError();
    results[2] = guardThread("test", [] { throw 42; });
    warns[2] = logLastError();
    results[3] = guardThread("test", [] { return ncclRemoteError; });
    results[4] = guardThread("test", [] {});
  }).join();
  EXPECT_EQ(results[0], ncclSystemError);
  EXPECT_NE(warns[0].find("The test thread ran out of memory"), std::string::npos) << warns[0];
  EXPECT_EQ(results[1], ncclInternalError);
  EXPECT_NE(warns[1].find("bad state"), std::string::npos) << warns[1];
  EXPECT_EQ(results[2], ncclInternalError);
  EXPECT_NE(warns[2].find("unknown type"), std::string::npos) << warns[2];
  EXPECT_EQ(results[3], ncclRemoteError);
  EXPECT_EQ(results[4], ncclSuccess);
}

TEST(RateLimit, OncePerIntervalPerCause) {
  RateLimit limit(milliseconds(200));
  EXPECT_TRUE(limit.allow(0));
  EXPECT_FALSE(limit.allow(0));
  EXPECT_FALSE(limit.allow(0));
  EXPECT_TRUE(limit.allow(1));  // another cause has its own budget
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_TRUE(limit.allow(0));
  EXPECT_EQ(limit.suppressedBefore(), 2u);
}

SocketAddress loopback() {
  SocketAddress addr{};
  addr.sin.sin_family = AF_INET;
  addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: any free one
  return addr;
}

int connectRaw(const SocketAddress& to) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, &to.sa, socketAddressLength(to)), 0);
  return fd;
}

// True once the server side has closed `fd` (end of stream or reset); its challenge is read past.
bool closedByServer(int fd) {
  char buffer[64];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

// Serves `acceptor` while a connect in the same thread waits for its answer.
SocketPump pumpOf(SocketAcceptor* acceptor) {
  return [acceptor](int fd) {
    std::vector<pollfd> fds{pollfd{fd, POLLIN, 0}};
    acceptor->addPollFds(&fds);
    (void)::poll(fds.data(), fds.size(), kSocketPollSliceMs);
    return acceptor->progress();
  };
}

TEST(SocketAcceptorLimits, SilentConnectionsBeyondTheCapDropTheOldest) {
  Socket listener;
  ASSERT_EQ(Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &listener), ncclSuccess);
  const SocketAddress where = listener.localAddress();
  constexpr size_t kCap = 4;
  SocketAcceptor acceptor(std::move(listener), sizeof(uint32_t), milliseconds(5000), kCap);
  std::vector<int> silent;
  for (int i = 0; i < 10; ++i) silent.push_back(connectRaw(where));
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(acceptor.progress(), ncclSuccess);
    std::this_thread::sleep_for(milliseconds(5));
  }
  std::vector<pollfd> fds;
  acceptor.addPollFds(&fds);
  EXPECT_EQ(fds.size(), 1 + kCap);  // the listener and the newest kCap connections
  std::this_thread::sleep_for(milliseconds(50));
  for (size_t i = 0; i < silent.size(); ++i) {
    EXPECT_EQ(closedByServer(silent[i]), i < silent.size() - kCap) << "connection " << i;
  }
  // A real peer still gets through, past the full table.
  Socket real;
  ASSERT_EQ(Socket::connect(where, kMagic, SocketType::kBootstrap, "acceptor", false,
                            Deadline::after(milliseconds(2000)), &real, pumpOf(&acceptor)),
            ncclSuccess);
  const uint32_t hello = 0xfeedbeef;
  ASSERT_EQ(real.sendAll(&hello, sizeof(hello), Deadline::after(milliseconds(2000))), ncclSuccess);
  AcceptedConnection conn;
  ASSERT_EQ(acceptor.accept(Deadline::after(milliseconds(2000)), &conn), ncclSuccess);
  uint32_t got = 0;
  std::memcpy(&got, conn.hello.data(), sizeof(got));
  EXPECT_EQ(got, hello);
  for (int fd : silent) ::close(fd);
}

}  // namespace
}  // namespace braid
