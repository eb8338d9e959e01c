// The built-in socket network over loopback: whole connections from a listener, messages of every
// size class (empty, inline, split over the data sockets) with random contents arriving intact and
// in order, several in flight, with and without helper threads; helper threads that start with the
// first large message and stop with the connection, also while they wait on a full socket; two
// connections on one listener, a cap on connections whose sockets never all arrive, a receive too
// small for its message, and a peer process killed in the middle of a message.
#include "net/socket_net.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scoped_env.h"
#include "util/params.h"

namespace braid::net {
namespace {

// 127.0.0.1, port 0 (the listener takes an ephemeral one).
SocketAddress loopback() {
  SocketAddress a{};
  EXPECT_EQ(socketAddressParse("127.0.0.1:1", AF_INET, "test", &a), ncclSuccess);
  socketAddressSetPort(&a, 0);
  return a;
}

// Accepts one connection, polling; fails the test after 10 s.
std::unique_ptr<SocketNetConn> acceptOne(SocketNetListener* l) {
  std::unique_ptr<SocketNetConn> conn;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (conn == nullptr && std::chrono::steady_clock::now() < until) {
    EXPECT_EQ(l->accept(&conn), ncclSuccess);
    if (conn == nullptr) usleep(1000);
  }
  EXPECT_NE(conn, nullptr);
  return conn;
}

// Answers the handshakes of a connect in the same thread.
std::function<ncclResult_t()> pumpOf(SocketNetListener* listener) {
  return [listener] { return listener->progressHandshakes(); };
}

struct Pair {
  std::unique_ptr<SocketNetListener> listener;
  std::unique_ptr<SocketNetConn> send;
  std::unique_ptr<SocketNetConn> recv;
};

Pair connectPair(int nSocks) {
  Pair p;
  SocketNetHandle handle{};
  EXPECT_EQ(SocketNetListener::listen(loopback(), &handle, &p.listener), ncclSuccess);
  EXPECT_EQ(socketNetConnect(handle, nSocks, &p.send, pumpOf(p.listener.get())), ncclSuccess);
  p.recv = acceptOne(p.listener.get());
  return p;
}

std::vector<char> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(n);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// Tests both ends until every request is done; false after 20 s or on an error.
bool drive(SocketNetConn* send, std::vector<SocketNetRequest*>* sends, SocketNetConn* recv,
           std::vector<SocketNetRequest*>* recvs, std::vector<size_t>* recvSizes) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t left = sends->size() + recvs->size();
  while (left > 0 && std::chrono::steady_clock::now() < until) {
    for (SocketNetRequest*& r : *sends) {
      bool done = false;
      if (r == nullptr) continue;
      if (send->test(r, &done, nullptr) != ncclSuccess) return false;
      if (done) r = nullptr, left--;
    }
    for (size_t i = 0; i < recvs->size(); i++) {
      bool done = false;
      if ((*recvs)[i] == nullptr) continue;
      if (recv->test((*recvs)[i], &done, &(*recvSizes)[i]) != ncclSuccess) return false;
      if (done) (*recvs)[i] = nullptr, left--;
    }
  }
  return left == 0;
}

// NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD for one test (the parameters are cached).
class SocketParams {
 public:
  SocketParams(int threads, int socksPerThread) : env_({"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"}) {
    setenv("NCCL_SOCKET_NTHREADS", std::to_string(threads).c_str(), 1);
    setenv("NCCL_NSOCKS_PERTHREAD", std::to_string(socksPerThread).c_str(), 1);
    paramsReset();
  }
  ~SocketParams() {
    env_.restore();
    paramsReset();
  }

 private:
  testing::ScopedEnv env_;
};

int threadsOfThisProcess() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    closedir(d);
  }
  return n;
}

// Parameter: helper threads per connection end (0: the caller's thread moves the data sockets).
class SocketNetThreads : public ::testing::TestWithParam<int> {};

TEST_P(SocketNetThreads, MessagesOfEverySizeArriveIntactAndInOrder) {
  SocketParams params(GetParam(), 2);
  const int nSocks = std::max(GetParam(), 1) * 2;
  ASSERT_EQ(socketNetSocksPerConn(), nSocks);
  Pair p = connectPair(nSocks);
  ASSERT_NE(p.recv, nullptr);
  EXPECT_EQ(p.recv->nSocks(), nSocks);
  // Empty, tiny, at and around the inline limit, split over 1..nSocks sockets, odd sizes.
  const std::vector<size_t> sizes = {0,      1,       4095, kSocketNetInlineBytes, kSocketNetInlineBytes + 1,
                                     200001, 3 << 20, 7,    (8 << 20) + 13,        kSocketNetMinPartBytes * 2};
  std::vector<std::vector<char>> payloads, outputs;
  std::vector<SocketNetRequest*> sends, recvs;
  for (size_t i = 0; i < sizes.size(); i++) {
    payloads.push_back(randomBytes(sizes[i], static_cast<uint32_t>(i + 1)));
    outputs.emplace_back(sizes[i] + 100, static_cast<char>(0x5a));  // receives larger than their messages
  }
  // Receives are posted first for half the messages, after the sends for the rest.
  for (size_t i = 0; i < sizes.size() / 2; i++) {
    SocketNetRequest* r = nullptr;
    ASSERT_EQ(p.recv->post(false, outputs[i].data(), outputs[i].size(), static_cast<int>(i), &r), ncclSuccess);
    recvs.push_back(r);
  }
  for (size_t i = 0; i < sizes.size(); i++) {
    SocketNetRequest* r = nullptr;
    ASSERT_EQ(p.send->post(true, payloads[i].data(), sizes[i], static_cast<int>(i), &r), ncclSuccess);
    sends.push_back(r);
  }
  for (size_t i = sizes.size() / 2; i < sizes.size(); i++) {
    SocketNetRequest* r = nullptr;
    ASSERT_EQ(p.recv->post(false, outputs[i].data(), outputs[i].size(), static_cast<int>(i), &r), ncclSuccess);
    recvs.push_back(r);
  }
  std::vector<size_t> got(sizes.size(), 12345);
  ASSERT_TRUE(drive(p.send.get(), &sends, p.recv.get(), &recvs, &got));
  for (size_t i = 0; i < sizes.size(); i++) {
    EXPECT_EQ(got[i], sizes[i]) << "message " << i;
    EXPECT_EQ(std::memcmp(outputs[i].data(), payloads[i].data(), sizes[i]), 0) << "message " << i;
    EXPECT_EQ(outputs[i][sizes[i]], 0x5a) << "message " << i << " wrote past its size";
  }
}

INSTANTIATE_TEST_SUITE_P(HelperThreads, SocketNetThreads, ::testing::Values(0, 1, 3),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "threads"; });

// A connection that carries only inline messages starts no helper; the first message split over the
// data sockets starts NCCL_SOCKET_NTHREADS at each end; destroying the ends stops them.
TEST(SocketNet, EachEndStartsItsHelpersWithItsFirstLargeMessage) {
  SocketParams params(3, 1);
  const int before = threadsOfThisProcess();
  {
    Pair p = connectPair(socketNetSocksPerConn());
    ASSERT_NE(p.recv, nullptr);
    auto exchange = [&](size_t bytes, uint32_t seed) {
      std::vector<char> payload = randomBytes(bytes, seed), out(bytes);
      std::vector<SocketNetRequest*> sends(1), recvs(1);
      EXPECT_EQ(p.send->post(true, payload.data(), bytes, 0, &sends[0]), ncclSuccess);
      EXPECT_EQ(p.recv->post(false, out.data(), bytes, 0, &recvs[0]), ncclSuccess);
      std::vector<size_t> got(1);
      EXPECT_TRUE(drive(p.send.get(), &sends, p.recv.get(), &recvs, &got));
      EXPECT_EQ(out, payload);
    };
    for (uint32_t i = 0; i < 20; i++) exchange(kSocketNetInlineBytes, i);
    EXPECT_EQ(threadsOfThisProcess(), before);
    exchange(3 * kSocketNetMinPartBytes + 1, 99);  // three parts, one per helper
    EXPECT_EQ(threadsOfThisProcess(), before + 6);
  }
  EXPECT_EQ(threadsOfThisProcess(), before);
}

// The receiver reads nothing, so the sender's helpers wait on full sockets; the sending end is
// still destroyed at once (its helpers look at the stop flag between polls).
TEST(SocketNet, AnEndWhoseHelpersWaitOnFullSocketsIsDestroyedAtOnce) {
  SocketParams params(2, 2);
  Pair p = connectPair(socketNetSocksPerConn());
  ASSERT_NE(p.recv, nullptr);
  std::vector<char> payload(64 << 20, 3);
  SocketNetRequest* s = nullptr;
  ASSERT_EQ(p.send->post(true, payload.data(), payload.size(), 0, &s), ncclSuccess);
  bool done = false;
  for (int i = 0; i < 100; i++) ASSERT_EQ(p.send->test(s, &done, nullptr), ncclSuccess);
  usleep(50 * 1000);
  ASSERT_FALSE(done);
  const auto start = std::chrono::steady_clock::now();
  p.send.reset();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 500.0);
}

// Many small messages sent at once arrive several per read of the control socket; the receives
// are posted one at a time after that, so messages wait in the receiver's buffer (where the
// socket itself has nothing left to say they are there).
TEST(SocketNet, SmallMessagesBufferedAheadOfTheirReceivesArriveInOrder) {
  Pair p = connectPair(2);
  ASSERT_NE(p.recv, nullptr);
  constexpr int kMessages = 300;
  std::vector<std::vector<char>> payloads;
  std::vector<SocketNetRequest*> sends;
  for (int i = 0; i < kMessages; i++) {
    payloads.push_back(randomBytes(static_cast<size_t>((i * 37) % 700), static_cast<uint32_t>(i + 100)));
    SocketNetRequest* r = nullptr;
    ASSERT_EQ(p.send->post(true, payloads[i].data(), payloads[i].size(), i, &r), ncclSuccess);
    sends.push_back(r);
  }
  std::vector<SocketNetRequest*> none;
  std::vector<size_t> noSizes;
  ASSERT_TRUE(drive(p.send.get(), &sends, p.recv.get(), &none, &noSizes));  // all sent before any receive
  for (int i = 0; i < kMessages; i++) {
    std::vector<char> out(800, static_cast<char>(0x5a));
    std::vector<SocketNetRequest*> recvs(1);
    ASSERT_EQ(p.recv->post(false, out.data(), out.size(), i, &recvs[0]), ncclSuccess);
    std::vector<size_t> got(1, 12345);
    std::vector<SocketNetRequest*> noSends;
    ASSERT_TRUE(drive(p.send.get(), &noSends, p.recv.get(), &recvs, &got)) << "message " << i;
    ASSERT_EQ(got[0], payloads[i].size()) << "message " << i;
    EXPECT_EQ(std::memcmp(out.data(), payloads[i].data(), got[0]), 0) << "message " << i;
    EXPECT_EQ(out[got[0]], 0x5a) << "message " << i;
  }
}

TEST(SocketNet, TwoConnectionsOnOneListenerAreTakenApart) {
  SocketNetHandle handle{};
  std::unique_ptr<SocketNetListener> listener;
  ASSERT_EQ(SocketNetListener::listen(loopback(), &handle, &listener), ncclSuccess);
  std::unique_ptr<SocketNetConn> a, b;
  ASSERT_EQ(socketNetConnect(handle, 2, &a, pumpOf(listener.get())), ncclSuccess);
  ASSERT_EQ(socketNetConnect(handle, 3, &b, pumpOf(listener.get())), ncclSuccess);
  std::unique_ptr<SocketNetConn> first = acceptOne(listener.get());
  std::unique_ptr<SocketNetConn> second = acceptOne(listener.get());
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->nSocks() + second->nSocks(), 5);
  SocketNetConn* fromB = first->nSocks() == 3 ? first.get() : second.get();
  // A message from b arrives on the connection with b's three data sockets.
  std::vector<char> payload = randomBytes(1 << 20, 7), out(1 << 20);
  SocketNetRequest *s = nullptr, *r = nullptr;
  ASSERT_EQ(b->post(true, payload.data(), payload.size(), 0, &s), ncclSuccess);
  ASSERT_EQ(fromB->post(false, out.data(), out.size(), 0, &r), ncclSuccess);
  std::vector<SocketNetRequest*> sends{s}, recvs{r};
  std::vector<size_t> got(1);
  ASSERT_TRUE(drive(b.get(), &sends, fromB, &recvs, &got));
  EXPECT_EQ(out, payload);
}

// A peer that opens the first socket of many connections and never the rest cannot hold more than
// kMaxPartial of them (the oldest go first), and a real connection still gets through.
TEST(SocketNet, IncompleteConnectionsAreCappedOldestFirst) {
  SocketNetHandle handle{};
  std::unique_ptr<SocketNetListener> listener;
  ASSERT_EQ(SocketNetListener::listen(loopback(), &handle, &listener), ncclSuccess);
  struct Hello {  // what each socket of a connection sends after the handshake (socket_net.cc)
    uint64_t connId;
    uint32_t index;
    uint32_t nSocks;
  };
  constexpr int kIncomplete = 100;
  const Deadline deadline = Deadline::after(std::chrono::milliseconds(5000));
  std::vector<Socket> halfOpen(kIncomplete);
  for (int i = 0; i < kIncomplete; i++) {
    ASSERT_EQ(
        Socket::connect(handle.addr, handle.magic, SocketType::kNetSocket, "listener", false, deadline, &halfOpen[i],
                        [&](int fd) {
                          pollfd p{fd, POLLIN, 0};
                          (void)::poll(&p, 1, 1);
                          return listener->progressHandshakes();
                        }),
        ncclSuccess);
    const Hello hello{0x1000u + static_cast<uint64_t>(i), 0, 2};
    ASSERT_EQ(halfOpen[i].sendAll(&hello, sizeof(hello), deadline), ncclSuccess);
    if (i % 16 == 15) {  // the listener sees them arrive over time, as from a real peer
      std::unique_ptr<SocketNetConn> none;
      ASSERT_EQ(listener->accept(&none), ncclSuccess);
      EXPECT_EQ(none, nullptr);
    }
  }
  std::unique_ptr<SocketNetConn> send;
  ASSERT_EQ(socketNetConnect(handle, 2, &send, pumpOf(listener.get())), ncclSuccess);
  std::unique_ptr<SocketNetConn> recv = acceptOne(listener.get());
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->nSocks(), 2);
  usleep(50 * 1000);
  int closed = 0;
  for (int i = 0; i < kIncomplete; i++) {
    char byte;
    const bool gone = ::recv(halfOpen[i].fd(), &byte, 1, MSG_DONTWAIT) == 0;
    closed += gone ? 1 : 0;
    // The newest ones are kept: they may still complete.
    if (i >= kIncomplete - 16) {
      EXPECT_FALSE(gone) << "connection " << i;
    }
  }
  EXPECT_GE(closed, kIncomplete - 64);
}

TEST(SocketNet, AMessageLargerThanItsReceiveIsAnErrorNotATruncation) {
  Pair p = connectPair(1);
  ASSERT_NE(p.recv, nullptr);
  std::vector<char> payload(1000, 1), out(500);
  SocketNetRequest *s = nullptr, *r = nullptr;
  ASSERT_EQ(p.send->post(true, payload.data(), payload.size(), 3, &s), ncclSuccess);
  ASSERT_EQ(p.recv->post(false, out.data(), out.size(), 3, &r), ncclSuccess);
  ncclResult_t result = ncclSuccess;
  bool done = false;
  for (int i = 0; i < 10000 && result == ncclSuccess && !done; i++) {
    size_t size = 0;
    bool sent = false;
    (void)p.send->test(s, &sent, nullptr);
    result = p.recv->test(r, &done, &size);
  }
  EXPECT_EQ(result, ncclInvalidUsage);
  // The connection stays failed.
  SocketNetRequest* again = nullptr;
  EXPECT_EQ(p.recv->post(false, out.data(), out.size(), 4, &again), ncclInvalidUsage);
}

// The peer sends its last message and closes: that message still completes (test() reads it with
// the close behind it), and a receive posted for a next one fails with ncclRemoteError.
TEST(SocketNet, APeerThatClosesAfterItsLastMessageCompletesItAndFailsTheNextReceive) {
  Pair p = connectPair(2);
  ASSERT_NE(p.recv, nullptr);
  std::vector<char> payload = randomBytes(100, 5), out(200), next(200);
  SocketNetRequest* s = nullptr;
  ASSERT_EQ(p.send->post(true, payload.data(), payload.size(), 0, &s), ncclSuccess);
  std::vector<SocketNetRequest*> sends{s}, none;
  std::vector<size_t> noSizes;
  ASSERT_TRUE(drive(p.send.get(), &sends, p.recv.get(), &none, &noSizes));
  p.send.reset();
  usleep(20 * 1000);  // the close is there before the first read
  SocketNetRequest *r = nullptr, *r2 = nullptr;
  ASSERT_EQ(p.recv->post(false, out.data(), out.size(), 0, &r), ncclSuccess);
  ASSERT_EQ(p.recv->post(false, next.data(), next.size(), 1, &r2), ncclSuccess);
  bool done = false;
  size_t size = 0;
  for (int i = 0; i < 1000 && !done; i++) ASSERT_EQ(p.recv->test(r, &done, &size), ncclSuccess);
  ASSERT_TRUE(done);
  EXPECT_EQ(size, payload.size());
  EXPECT_EQ(std::memcmp(out.data(), payload.data(), payload.size()), 0);
  EXPECT_EQ(p.recv->test(r2, &done, &size), ncclRemoteError);
}

// The sender is another process, killed with SIGKILL in the middle of a 64 MiB message: it sends
// what the sockets' buffers take while nobody reads (a few MiB), then dies; only then does the
// receive start, so the message is cut short every time.
TEST(SocketNet, APeerKilledMidMessageFailsTheReceiveWithRemoteError) {
  SocketNetHandle handle{};
  std::unique_ptr<SocketNetListener> listener;
  ASSERT_EQ(SocketNetListener::listen(loopback(), &handle, &listener), ncclSuccess);
  int accepted[2];
  ASSERT_EQ(pipe(accepted), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<SocketNetConn> send;
    if (socketNetConnect(handle, 2, &send) != ncclSuccess) _exit(2);
    char go = 0;
    if (read(accepted[0], &go, 1) != 1) _exit(3);
    std::vector<char> payload(64 << 20, 9);
    SocketNetRequest* s = nullptr;
    if (send->post(true, payload.data(), payload.size(), 0, &s) != ncclSuccess) _exit(4);
    bool done = false;
    for (int i = 0; i < 200; i++) (void)send->test(s, &done, nullptr);  // fills the socket buffers
    raise(SIGKILL);
  }
  std::unique_ptr<SocketNetConn> recv = acceptOne(listener.get());
  ASSERT_NE(recv, nullptr);
  ASSERT_EQ(write(accepted[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  std::vector<char> out(64 << 20);
  SocketNetRequest* r = nullptr;
  ASSERT_EQ(recv->post(false, out.data(), out.size(), 0, &r), ncclSuccess);
  const auto start = std::chrono::steady_clock::now();
  ncclResult_t result = ncclSuccess;
  bool done = false;
  while (result == ncclSuccess && !done && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    size_t size = 0;
    result = recv->test(r, &done, &size);
  }
  EXPECT_FALSE(done);
  EXPECT_EQ(result, ncclRemoteError);
  close(accepted[0]);
  close(accepted[1]);
}

}  // namespace
}  // namespace braid::net
