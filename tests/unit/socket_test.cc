// util/socket: addresses, handshake, framing, deadlines, abort, retries (threads on loopback).
#include "util/socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "util/log.h"
#include "util/params.h"
#include "util/socket_connector.h"

namespace braid {
namespace {

using std::chrono::milliseconds;
constexpr uint64_t kMagic = 0x1234567890abcdefull;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Sets an environment variable for one test and re-reads parameters; restores both afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old != nullptr) old_ = old;
    setenv(name, value, 1);
    paramsReset();
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
    paramsReset();
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

SocketAddress loopback4() {
  SocketAddress addr{};
  addr.sin.sin_family = AF_INET;
  addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A port nothing listens on (bound once, then released).
SocketAddress unusedPort() {
  Socket probe;
  EXPECT_EQ(Socket::listen(loopback4(), kMagic, SocketType::kBootstrap, &probe), ncclSuccess);
  return probe.localAddress();
}

struct Pair {
  Socket client;
  Socket server;
};

// Serves `acceptor` while a connect in the same thread waits for its answer.
SocketPump pumpOf(SocketAcceptor* acceptor) {
  return [acceptor](int fd) {
    std::vector<pollfd> fds{pollfd{fd, POLLIN, 0}};
    acceptor->addPollFds(&fds);
    (void)::poll(fds.data(), fds.size(), kSocketPollSliceMs);
    return acceptor->progress();
  };
}

Pair connectPair(SocketAcceptor* acceptor) {
  Pair pair;
  EXPECT_EQ(Socket::connect(acceptor->listener().localAddress(), kMagic, SocketType::kBootstrap, "test peer", false,
                            Deadline::after(milliseconds(2000)), &pair.client, pumpOf(acceptor)),
            ncclSuccess);
  AcceptedConnection conn;
  EXPECT_EQ(acceptor->accept(Deadline::after(milliseconds(2000)), &conn), ncclSuccess);
  pair.server = std::move(conn.socket);
  return pair;
}

SocketAcceptor makeAcceptor(const SocketAddress& where = loopback4(), size_t helloBytes = 0) {
  Socket listener;
  EXPECT_EQ(Socket::listen(where, kMagic, SocketType::kBootstrap, &listener), ncclSuccess);
  return SocketAcceptor(std::move(listener), helloBytes);
}

TEST(SocketAddressTest, ParseAndFormat) {
  SocketAddress addr;
  ASSERT_EQ(socketAddressParse("127.0.0.1:5000", AF_UNSPEC, "TEST", &addr), ncclSuccess);
  EXPECT_EQ(addr.sa.sa_family, AF_INET);
  EXPECT_EQ(socketAddressPort(addr), 5000);
  EXPECT_EQ(socketAddressToString(addr), "127.0.0.1:5000");
  ASSERT_EQ(socketAddressParse("[::1]:80", AF_UNSPEC, "TEST", &addr), ncclSuccess);
  EXPECT_EQ(addr.sa.sa_family, AF_INET6);
  EXPECT_EQ(socketAddressToString(addr), "[::1]:80");
  ASSERT_EQ(socketAddressParse("localhost:1234", AF_UNSPEC, "TEST", &addr), ncclSuccess);
  EXPECT_TRUE(socketAddressIsValid(addr));
  EXPECT_EQ(socketAddressPort(addr), 1234);
  for (const char* bad : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "fd00::2:5000", ":5", "[::1]5", "x:y"}) {
    EXPECT_EQ(socketAddressParse(bad, AF_UNSPEC, "TEST", &addr), ncclInvalidUsage) << bad;
    EXPECT_NE(std::string(logLastError()).find("TEST"), std::string::npos) << logLastError();
  }
  SocketAddress garbage{};
  garbage.sa.sa_family = 77;
  EXPECT_FALSE(socketAddressIsValid(garbage));
  EXPECT_NE(socketAddressToString(garbage).find("invalid"), std::string::npos);
}

TEST(SocketTest, ListenOnEphemeralPortAndExchangeFramedMessages) {
  SocketAcceptor acceptor = makeAcceptor();
  EXPECT_NE(socketAddressPort(acceptor.listener().localAddress()), 0);
  Pair pair = connectPair(&acceptor);
  const char text[] = "hello over loopback";
  Deadline deadline = Deadline::after(milliseconds(2000));
  ASSERT_EQ(pair.client.sendMsg(text, sizeof(text), deadline), ncclSuccess);
  char buffer[64] = {};
  size_t got = 0;
  ASSERT_EQ(pair.server.recvMsg(buffer, sizeof(buffer), &got, deadline), ncclSuccess);
  EXPECT_EQ(got, sizeof(text));
  EXPECT_STREQ(buffer, text);
  // Zero-length messages are messages too.
  ASSERT_EQ(pair.server.sendMsg(nullptr, 0, deadline), ncclSuccess);
  ASSERT_EQ(pair.client.recvMsg(buffer, sizeof(buffer), &got, deadline), ncclSuccess);
  EXPECT_EQ(got, 0u);
}

TEST(SocketTest, LargeTransferBothWays) {
  SocketAcceptor acceptor = makeAcceptor();
  Pair pair = connectPair(&acceptor);
  std::vector<char> out(8 << 20), in(out.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 131 + 7);
  Deadline deadline = Deadline::after(milliseconds(10000));
  std::thread sender([&] { EXPECT_EQ(pair.client.sendAll(out.data(), out.size(), deadline), ncclSuccess); });
  ASSERT_EQ(pair.server.recvAll(in.data(), in.size(), deadline), ncclSuccess);
  sender.join();
  EXPECT_EQ(in, out);
}

TEST(SocketTest, TruncatedMessageNamesBothSizes) {
  SocketAcceptor acceptor = makeAcceptor();
  Pair pair = connectPair(&acceptor);
  char data[16] = {};
  Deadline deadline = Deadline::after(milliseconds(2000));
  ASSERT_EQ(pair.client.sendMsg(data, sizeof(data), deadline), ncclSuccess);
  char small[8];
  size_t got = 0;
  EXPECT_EQ(pair.server.recvMsg(small, sizeof(small), &got, deadline), ncclInvalidUsage);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("truncated"), std::string::npos) << warn;
  EXPECT_NE(warn.find("16 bytes"), std::string::npos) << warn;
  EXPECT_NE(warn.find("holds 8"), std::string::npos) << warn;
}

// Connects with raw TCP and sends `bytes` as the handshake.
int rawConnect(const SocketAddress& addr, const void* bytes, size_t n) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, &addr.sa, socketAddressLength(addr)), 0);
  if (n > 0) {
    EXPECT_EQ(::send(fd, bytes, n, 0), static_cast<ssize_t>(n));
  }
  return fd;
}

TEST(SocketTest, HandshakeMismatchesAreDroppedAndSilentPeersDoNotStall) {
  SocketAcceptor acceptor = makeAcceptor(loopback4(), /*helloBytes=*/4);
  const SocketAddress& where = acceptor.listener().localAddress();
  // The right type with a made-up proof (a stranger who knows the magic but not the key), and a
  // well-formed message of another type: neither can answer the listener's challenge.
  char wrongProof[kSocketHandshakeBytes] = {};
  uint32_t type = static_cast<uint32_t>(SocketType::kBootstrap);
  std::memcpy(wrongProof, &type, 4);
  std::memcpy(wrongProof + 4 + kSocketNonceBytes, &kMagic, 8);
  char wrongType[kSocketHandshakeBytes] = {};
  uint32_t badType = static_cast<uint32_t>(SocketType::kProxy);
  std::memcpy(wrongType, &badType, 4);
  int silent = rawConnect(where, nullptr, 0);
  int garbage1 = rawConnect(where, wrongProof, sizeof(wrongProof));
  int garbage2 = rawConnect(where, wrongType, sizeof(wrongType));
  Socket good;
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(Socket::connect(where, kMagic, SocketType::kBootstrap, "good peer", false,
                            Deadline::after(milliseconds(2000)), &good, pumpOf(&acceptor)),
            ncclSuccess);
  ASSERT_EQ(good.sendAll("ping", 4, Deadline::after(milliseconds(2000))), ncclSuccess);
  AcceptedConnection conn;
  ASSERT_EQ(acceptor.accept(Deadline::after(milliseconds(2000)), &conn), ncclSuccess);
  EXPECT_LT(secondsSince(start), 0.5);
  EXPECT_EQ(std::string(conn.hello.begin(), conn.hello.end()), "ping");
  EXPECT_EQ(socketAddressPort(conn.socket.peerAddress()), socketAddressPort(good.localAddress()));
  // The strangers were hung up on after the challenge, with no proof from the listener.
  for (int fd : {garbage1, garbage2}) {
    char challenge[kSocketNonceBytes + 1];
    EXPECT_EQ(::recv(fd, challenge, sizeof(challenge), MSG_WAITALL), static_cast<ssize_t>(kSocketNonceBytes));
    ::close(fd);
  }
  ::close(silent);
  AcceptedConnection none;
  EXPECT_FALSE(acceptor.takeReady(&none));
}

// A connector whose acceptor answers with a made-up proof fails, and keeps failing: the proof check
// ends the handshake's state, and a later progress() must not take the refused connection for a
// complete one.
TEST(SocketTest, AConnectorRefusedByItsProofCheckStaysFailed) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  SocketAddress where = loopback4();
  socklen_t len = socketAddressLength(where);
  ASSERT_EQ(::bind(listener, &where.sa, len), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  ASSERT_EQ(::getsockname(listener, &where.sa, &len), 0);
  std::atomic<bool> finished{false};
  std::thread fakeAcceptor([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    char nonce[kSocketNonceBytes] = {1};
    char reply[kSocketHandshakeBytes];
    char proof[kSocketProofBytes] = {2};
    if (::send(fd, nonce, sizeof(nonce), 0) == static_cast<ssize_t>(sizeof(nonce)) &&
        ::recv(fd, reply, sizeof(reply), MSG_WAITALL) == static_cast<ssize_t>(sizeof(reply))) {
      (void)::send(fd, proof, sizeof(proof), 0);
    }
    while (!finished.load()) std::this_thread::sleep_for(milliseconds(5));  // keeps the connection open
    ::close(fd);
  });
  SocketConnector connector;
  ASSERT_EQ(SocketConnector::start(where, kMagic, SocketType::kBootstrap, "fake acceptor", false,
                                   Deadline::after(milliseconds(2000)), &connector),
            ncclSuccess);
  ncclResult_t result = ncclSuccess;
  bool done = false;
  const auto start = std::chrono::steady_clock::now();
  while (result == ncclSuccess && !done && secondsSince(start) < 5) {
    pollfd pfd{connector.fd(), static_cast<short>(connector.wantsWrite() ? POLLOUT : POLLIN), 0};
    (void)::poll(&pfd, 1, kSocketPollSliceMs);
    result = connector.progress(&done);
  }
  EXPECT_EQ(result, ncclRemoteError);
  EXPECT_FALSE(done);
  EXPECT_EQ(connector.progress(&done), ncclRemoteError);
  EXPECT_FALSE(done);
  finished = true;
  fakeAcceptor.join();
  ::close(listener);
}

TEST(SocketTest, AcceptTimesOut) {
  SocketAcceptor acceptor = makeAcceptor();
  AcceptedConnection conn;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(acceptor.accept(Deadline::after(milliseconds(150)), &conn), ncclRemoteError);
  EXPECT_GE(secondsSince(start), 0.14);
  EXPECT_LT(secondsSince(start), 0.6);
  EXPECT_NE(std::string(logLastError()).find("Timed out"), std::string::npos) << logLastError();
}

TEST(SocketTest, RefusedConnectFailsAtOnceWithoutRetry) {
  SocketAddress nobody = unusedPort();
  Socket sock;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Socket::connect(nobody, kMagic, SocketType::kBootstrap, "gone peer", false,
                            Deadline::after(milliseconds(5000)), &sock),
            ncclRemoteError);
  EXPECT_LT(secondsSince(start), 0.2);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("gone peer"), std::string::npos) << warn;
  EXPECT_NE(warn.find("refused"), std::string::npos) << warn;
}

TEST(SocketTest, RefusedConnectRetriesWithLinearBackoff) {
  ScopedEnv count("NCCL_SOCKET_RETRY_CNT", "3");
  ScopedEnv sleep("NCCL_SOCKET_RETRY_SLEEP_MSEC", "20");
  SocketAddress nobody = unusedPort();
  Socket sock;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Socket::connect(nobody, kMagic, SocketType::kBootstrap, "late peer", true,
                            Deadline::after(milliseconds(5000)), &sock),
            ncclRemoteError);
  double elapsed = secondsSince(start);
  EXPECT_GE(elapsed, 0.11);  // 20 + 40 + 60 ms of back-off
  EXPECT_LT(elapsed, 1.0);
  EXPECT_NE(std::string(logLastError()).find("4 attempts"), std::string::npos) << logLastError();
}

TEST(SocketTest, RetriesUntilTheListenerAppears) {
  ScopedEnv sleep("NCCL_SOCKET_RETRY_SLEEP_MSEC", "10");
  SocketAddress where = unusedPort();
  std::thread late([where] {
    std::this_thread::sleep_for(milliseconds(150));
    SocketAcceptor acceptor = makeAcceptor(where);
    AcceptedConnection conn;
    EXPECT_EQ(acceptor.accept(Deadline::after(milliseconds(3000)), &conn), ncclSuccess);
  });
  Socket sock;
  EXPECT_EQ(Socket::connect(where, kMagic, SocketType::kBootstrap, "late peer", true,
                            Deadline::after(milliseconds(3000)), &sock),
            ncclSuccess);
  late.join();
}

TEST(SocketTest, RecvTimesOut) {
  SocketAcceptor acceptor = makeAcceptor();
  Pair pair = connectPair(&acceptor);
  char byte;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(pair.server.recvAll(&byte, 1, Deadline::after(milliseconds(200))), ncclRemoteError);
  EXPECT_GE(secondsSince(start), 0.19);
  EXPECT_LT(secondsSince(start), 0.7);
  EXPECT_NE(std::string(logLastError()).find("Timed out"), std::string::npos);
}

TEST(SocketTest, AbortFlagStopsAWaitQuickly) {
  SocketAcceptor acceptor = makeAcceptor();
  Pair pair = connectPair(&acceptor);
  std::atomic<int> abortFlag{0};
  std::thread aborter([&] {
    std::this_thread::sleep_for(milliseconds(100));
    abortFlag.store(1);
  });
  char byte;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(pair.server.recvAll(&byte, 1, Deadline::never(&abortFlag)), ncclInternalError);
  EXPECT_LT(secondsSince(start), 0.5);
  aborter.join();
}

TEST(SocketTest, PeerCloseIsAnError) {
  SocketAcceptor acceptor = makeAcceptor();
  Pair pair = connectPair(&acceptor);
  ASSERT_EQ(pair.client.sendAll("ab", 2, Deadline::after(milliseconds(1000))), ncclSuccess);
  pair.client.close();
  char buffer[4];
  EXPECT_EQ(pair.server.recvAll(buffer, sizeof(buffer), Deadline::after(milliseconds(1000))), ncclRemoteError);
  std::string warn = logLastError();
  EXPECT_NE(warn.find("closed the connection after 2 of 4"), std::string::npos) << warn;
}

TEST(SocketTest, Ipv6Loopback) {
  SocketAddress v6{};
  v6.sin6.sin6_family = AF_INET6;
  v6.sin6.sin6_addr = in6addr_loopback;
  Socket listener;
  if (Socket::listen(v6, kMagic, SocketType::kBootstrap, &listener) != ncclSuccess) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  SocketAcceptor acceptor(std::move(listener), 0);
  EXPECT_EQ(socketAddressToString(acceptor.listener().localAddress()).rfind("[::1]:", 0), 0u);
  Pair pair = connectPair(&acceptor);
  uint64_t value = 42, got = 0;
  ASSERT_EQ(pair.client.sendAll(&value, sizeof(value), Deadline::after(milliseconds(1000))), ncclSuccess);
  ASSERT_EQ(pair.server.recvAll(&got, sizeof(got), Deadline::after(milliseconds(1000))), ncclSuccess);
  EXPECT_EQ(got, 42u);
}

TEST(SocketTest, DeadlineSlices) {
  Deadline never = Deadline::never();
  EXPECT_FALSE(never.expired());
  EXPECT_EQ(never.sliceMs(), kSocketPollSliceMs);
  Deadline soon = Deadline::after(milliseconds(5));
  EXPECT_LE(soon.sliceMs(), 6);
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(soon.expired());
  EXPECT_EQ(soon.sliceMs(), 0);
  Deadline capped = Deadline::after(milliseconds(10000)).capped(milliseconds(50));
  EXPECT_LE(capped.sliceMs(100), 51);
}

}  // namespace
}  // namespace braid
