// TLS on util/socket's connections (util/tls.h), on loopback: data both ways arrives exactly and
// the wire carries none of it in the clear; a byte changed on the way is caught; a wrong
// pre-shared key, and a plain peer meeting a TLS peer, are refused quickly with a WARN on both
// sides; BRAID_ENCRYPTION_PSK_FILE turns encryption on (and a key file others can read does not);
// without OpenSSL, asking for encryption fails with a clear error and nothing connects in the clear.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tls_test_util.h"
#include "util/socket.h"

namespace braid {
namespace {

using std::chrono::milliseconds;
using testing::kOtherPsk;
using testing::kTestPsk;
using testing::setPsk;
constexpr uint64_t kMagic = 0x7e57c0ffee15600dull;
constexpr size_t kHelloBytes = 8;

SocketAddress loopback() {
  SocketAddress addr{};
  addr.sin.sin_family = AF_INET;
  addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

SocketPump pumpOf(SocketAcceptor* acceptor) {
  return [acceptor](int fd) {
    std::vector<pollfd> fds{pollfd{fd, POLLIN, 0}};
    acceptor->addPollFds(&fds);
    (void)::poll(fds.data(), fds.size(), kSocketPollSliceMs);
    return acceptor->progress();
  };
}

SocketAcceptor listenHere() {
  Socket listener;
  EXPECT_EQ(Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &listener), ncclSuccess);
  return SocketAcceptor(std::move(listener), kHelloBytes, milliseconds(3000));
}

// Connects to `to` (the listener, or a relay in front of it), sends the greeting and takes the
// accepted end. Fails the test where a step fails.
struct Pair {
  Socket client;
  Socket server;
};
Pair connectPair(SocketAcceptor* acceptor, const SocketAddress& to) {
  Pair p;
  const Deadline deadline = Deadline::after(milliseconds(5000));
  EXPECT_EQ(
      Socket::connect(to, kMagic, SocketType::kBootstrap, "test peer", false, deadline, &p.client, pumpOf(acceptor)),
      ncclSuccess);
  const char hello[kHelloBytes] = {'g', 'r', 'e', 'e', 't', 'i', 'n', 'g'};
  EXPECT_EQ(p.client.sendAll(hello, sizeof(hello), deadline), ncclSuccess);
  AcceptedConnection conn;
  EXPECT_EQ(acceptor->accept(deadline, &conn), ncclSuccess);
  EXPECT_EQ(std::string(conn.hello.begin(), conn.hello.end()), std::string(hello, sizeof(hello)));
  p.server = std::move(conn.socket);
  return p;
}

std::vector<char> randomData(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(n);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// A TCP relay between one connector and a listener: records what the connector sends and can
// change one byte of it on the way (at offset flipAt), as someone in between could.
class Relay {
 public:
  explicit Relay(const SocketAddress& target, size_t flipAt = SIZE_MAX) : target_(target), flipAt_(flipAt) {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    address_ = loopback();
    socklen_t len = sizeof(address_.sin);
    EXPECT_EQ(::bind(listenFd_, &address_.sa, len), 0);
    EXPECT_EQ(::listen(listenFd_, 4), 0);
    EXPECT_EQ(::getsockname(listenFd_, &address_.sa, &len), 0);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    ::close(listenFd_);
  }
  const SocketAddress& address() const { return address_; }
  // What the connector sent so far (call once its connection is done with).
  std::string upstream() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    thread_ = std::thread([] {});
    return upstream_;
  }

 private:
  void run() {
    pollfd l{listenFd_, POLLIN, 0};
    while (!stop_ && ::poll(&l, 1, 10) == 0) {
    }
    if (stop_) return;
    const int in = ::accept(listenFd_, nullptr, nullptr);
    const int out = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(out, &target_.sa, sizeof(target_.sin)), 0);
    char buffer[65536];
    int open = 2;
    while (!stop_ && open == 2) {
      pollfd fds[2] = {{in, POLLIN, 0}, {out, POLLIN, 0}};
      if (::poll(fds, 2, 10) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::recv(fds[i].fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
          open = 1;
          break;
        }
        if (i == 0) {
          if (flipAt_ >= upstream_.size() && flipAt_ < upstream_.size() + static_cast<size_t>(n)) {
            buffer[flipAt_ - upstream_.size()] ^= 0x01;
          }
          upstream_.append(buffer, static_cast<size_t>(n));
        }
        (void)::send(i == 0 ? out : in, buffer, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
    }
    ::close(in);
    ::close(out);
  }

  SocketAddress target_;
  size_t flipAt_;
  int listenFd_ = -1;
  SocketAddress address_{};
  std::atomic<bool> stop_{false};
  std::string upstream_;
  std::thread thread_;
};

using TlsSocketTest = testing::TlsTest;

// A connection to `acceptor` that both sides refuse: the connector fails within 2 s (not at its
// 5 s deadline), and the acceptor keeps nothing.
void expectRefusedQuickly(SocketAcceptor* acceptor) {
  const auto start = std::chrono::steady_clock::now();
  Socket client;
  EXPECT_EQ(Socket::connect(acceptor->listener().localAddress(), kMagic, SocketType::kBootstrap, "test peer", false,
                            Deadline::after(milliseconds(5000)), &client, pumpOf(acceptor)),
            ncclRemoteError);
  EXPECT_LT(secondsSince(start), 2.0);
  AcceptedConnection conn;
  EXPECT_EQ(acceptor->progress(), ncclSuccess);
  EXPECT_FALSE(acceptor->takeReady(&conn));
}

TEST_F(TlsSocketTest, DataBothWaysArrivesExactlyAndNeverInTheClear) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  const std::string marker = "BRAID-PLAINTEXT-MARKER-";
  std::string text;
  while (text.size() < 100000) text += marker + std::to_string(text.size());
  for (const bool encrypt : {false, true}) {
    SCOPED_TRACE(encrypt ? "TLS" : "plain");
    if (encrypt) {
      ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
    } else {
      tlsDisable();
    }
    SocketAcceptor acceptor = listenHere();
    EXPECT_EQ(acceptor.listener().encrypted(), encrypt);
    Relay relay(acceptor.listener().localAddress());
    Pair p = connectPair(&acceptor, relay.address());
    ASSERT_TRUE(p.client.valid() && p.server.valid());
    EXPECT_EQ(p.client.encrypted(), encrypt);
    EXPECT_EQ(p.server.encrypted(), encrypt);
    const Deadline deadline = Deadline::after(milliseconds(10000));
    // Framed messages one way, a large random block the other way at the same time.
    const std::vector<char> big = randomData((6 << 20) + 11, 7);
    std::vector<char> bigIn(big.size());
    std::thread back([&] { EXPECT_EQ(p.server.sendAll(big.data(), big.size(), deadline), ncclSuccess); });
    ASSERT_EQ(p.client.sendMsg(text.data(), text.size(), deadline), ncclSuccess);
    std::vector<char> in(text.size() + 1, 'x');
    size_t got = 0;
    ASSERT_EQ(p.server.recvMsg(in.data(), in.size(), &got, deadline), ncclSuccess);
    ASSERT_EQ(got, text.size());
    EXPECT_EQ(std::string(in.data(), got), text);
    ASSERT_EQ(p.client.recvAll(bigIn.data(), bigIn.size(), deadline), ncclSuccess);
    back.join();
    EXPECT_TRUE(bigIn == big);
    p.client.close();
    p.server.close();
    const std::string wire = relay.upstream();
    EXPECT_GT(wire.size(), text.size());
    EXPECT_EQ(wire.find(marker) != std::string::npos, !encrypt) << "what the connector sent, as seen in between";
  }
}

TEST_F(TlsSocketTest, AByteChangedOnTheWayIsCaughtNotDelivered) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
  SocketAcceptor acceptor = listenHere();
  Relay relay(acceptor.listener().localAddress(), /*flipAt=*/200000);
  Pair p = connectPair(&acceptor, relay.address());
  const std::vector<char> data = randomData(1 << 20, 3);
  std::vector<char> in(data.size());
  const Deadline deadline = Deadline::after(milliseconds(5000));
  std::thread sender([&] { (void)p.client.sendAll(data.data(), data.size(), deadline); });
  EXPECT_EQ(p.server.recvAll(in.data(), in.size(), deadline), ncclRemoteError);
  p.server.close();
  sender.join();
  EXPECT_NE(log().find("altered in transit"), std::string::npos) << log();
}

TEST_F(TlsSocketTest, AnotherKeyIsRefusedOnBothSidesQuickly) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
  SocketAcceptor acceptor = listenHere();
  ASSERT_EQ(setPsk(kOtherPsk), ncclSuccess);
  expectRefusedQuickly(&acceptor);
  const std::string text = log();
  EXPECT_NE(text.find("Listener 127.0.0.1:"), std::string::npos) << text;               // the acceptor's WARN
  EXPECT_NE(text.find("The TLS handshake with test peer"), std::string::npos) << text;  // the connector's
  EXPECT_NE(text.find("a different pre-shared key?"), std::string::npos) << text;
  EXPECT_EQ(text.find(kTestPsk), std::string::npos) << "a key was logged";
  EXPECT_EQ(text.find(kOtherPsk), std::string::npos) << "a key was logged";
}

TEST_F(TlsSocketTest, PlainAndTlsPeersRefuseEachOtherWithAWarnOnBothSides) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  for (const bool listenerEncrypts : {true, false}) {
    SCOPED_TRACE(listenerEncrypts ? "TLS listener, plain connector" : "plain listener, TLS connector");
    tlsDisable();
    if (listenerEncrypts) {
      ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
    }
    SocketAcceptor acceptor = listenHere();
    if (listenerEncrypts) {
      tlsDisable();
    } else {
      ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
    }
    expectRefusedQuickly(&acceptor);
  }
  const std::string text = log();
  // Each side once as acceptor and once as connector, in the words of its own setting.
  EXPECT_NE(text.find("refused the connection from 127.0.0.1:"), std::string::npos) << text;
  EXPECT_NE(text.find("test peer (127.0.0.1:"), std::string::npos) << text;
  EXPECT_NE(text.find("it does not encrypt and this process encrypts with TLS"), std::string::npos) << text;
  EXPECT_NE(text.find("it encrypts with TLS and this process does not"), std::string::npos) << text;
}

TEST_F(TlsSocketTest, KeyFileTurnsEncryptionOnAndMustBePrivate) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  const std::string path = dir_ + "/psk";
  {
    std::ofstream file(path);
    file << kTestPsk << "\n";
  }
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  setEnv("BRAID_ENCRYPTION_PSK_FILE", path);
  tlsReset();
  SocketAcceptor acceptor = listenHere();
  EXPECT_TRUE(acceptor.listener().encrypted());
  Pair p = connectPair(&acceptor, acceptor.listener().localAddress());
  ASSERT_TRUE(p.client.encrypted() && p.server.encrypted());
  // The same key through the API meets the file's: one trailing newline is not part of the key.
  ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
  Pair q = connectPair(&acceptor, acceptor.listener().localAddress());
  EXPECT_TRUE(q.client.encrypted() && q.server.valid());
  // A call wins over the file.
  tlsDisable();
  Socket plain;
  EXPECT_EQ(Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &plain), ncclSuccess);
  EXPECT_FALSE(plain.encrypted());

  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  tlsReset();
  Socket refused;
  EXPECT_EQ(Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &refused), ncclInvalidUsage);
  EXPECT_NE(log().find("chmod 600"), std::string::npos) << log();
  // Fail closed: connecting does not fall back to plain text either.
  EXPECT_EQ(Socket::connect(acceptor.listener().localAddress(), kMagic, SocketType::kBootstrap, "test peer", false,
                            Deadline::after(milliseconds(1000)), &refused),
            ncclInvalidUsage);

  {
    std::ofstream file(path, std::ios::trunc);
    file << "short key\n";
  }
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  tlsReset();
  EXPECT_EQ(Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &refused), ncclInvalidUsage);
  EXPECT_NE(log().find("at least 32 bytes"), std::string::npos) << log();
}

TEST_F(TlsSocketTest, ShortKeysAreRefusedAndChangeNothing) {
  BRAID_SKIP_WITHOUT_OPENSSL();
  ASSERT_EQ(setPsk(kTestPsk), ncclSuccess);
  EXPECT_EQ(setPsk("0123456789abcdef0123456789abcde"), ncclInvalidArgument);  // 31 bytes
  EXPECT_NE(std::string(logLastError()).find("at least 32"), std::string::npos) << logLastError();
  std::shared_ptr<const TlsContext> context;
  ASSERT_EQ(tlsCurrent(&context), ncclSuccess);
  EXPECT_NE(context, nullptr);  // still the earlier key
}

// Run in a fresh process (the library, once loaded, stays loaded): exits 0 when every check holds.
int absentOpenSslChecks() {
  setenv("BRAID_TLS_LIBSSL", "/nonexistent/libssl.so.3", 1);
  paramsReset();
  tlsReset();
  if (setPsk(kTestPsk) != ncclSystemError) return 1;
  if (std::strstr(logLastError(), "libssl.so.3 could not be loaded") == nullptr) return 2;
  // Fail closed: nothing listens or connects until encryption works or is turned off.
  std::shared_ptr<const TlsContext> context;
  if (tlsCurrent(&context) != ncclSystemError) return 3;
  Socket listener;
  if (Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &listener) != ncclSystemError) return 4;
  tlsDisable();
  if (tlsCurrent(&context) != ncclSuccess || context != nullptr) return 5;
  if (Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &listener) != ncclSuccess) return 6;
  return 0;
}

TEST_F(TlsSocketTest, WithoutOpenSslEncryptionFailsClearlyAndNothingConnectsInTheClear) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(absentOpenSslChecks()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace braid
