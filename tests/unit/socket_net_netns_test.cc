// The built-in socket network between two network namespaces joined by a veth pair: the closest one
// machine gets to two hosts, with a link that can be taken down. Messages of every size class cross
// intact; a peer killed mid-stream and a link dropped mid-stream both end in ncclRemoteError on the
// surviving side(s) within the timeout (BRAID_NET_SOCKET_TIMEOUT_MS), never a hang.
//
// Each end is a child process that enters its namespace with setns(); they meet through pipes.
// Needs root (ip netns, veth): skipped with a message where namespaces cannot be made.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "net/socket_net.h"
#include "util/params.h"

namespace braid::net {
namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: comparable across processes

constexpr const char* kAddrA = "10.213.0.1";
constexpr const char* kAddrB = "10.213.0.2";
constexpr size_t kStreamBytes = size_t{4} << 20;

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) close(fd);
  }
  bool put(const void* p, size_t n) const { return write(fds[1], p, n) == static_cast<ssize_t>(n); }
  // Reads exactly n bytes; false at EOF (every writer gone) or after 60 s.
  bool get(void* p, size_t n) const {
    size_t got = 0;
    while (got < n) {
      pollfd pfd{fds[0], POLLIN, 0};
      if (poll(&pfd, 1, 60000) <= 0) return false;
      const ssize_t k = read(fds[0], static_cast<char*>(p) + got, n - got);
      if (k <= 0) return false;
      got += static_cast<size_t>(k);
    }
    return true;
  }
  // The parent's copy of the write end: closed once the children have theirs, so that a child's
  // death shows as EOF instead of a wait.
  void closeWrite() {
    close(fds[1]);
    fds[1] = -1;
  }
};

// What a streaming end saw: its first error (ncclSuccess if none before the limit), when, and how
// many bytes it moved before.
struct StreamResult {
  int32_t result = -1;
  int32_t pad = 0;
  int64_t atNs = 0;
  uint64_t bytes = 0;
};

std::vector<char> patternBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(n);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

std::unique_ptr<SocketNetConn> acceptWithin(SocketNetListener* l, std::chrono::seconds limit) {
  std::unique_ptr<SocketNetConn> conn;
  const auto until = Clock::now() + limit;
  while (conn == nullptr && Clock::now() < until) {
    if (l->accept(&conn) != ncclSuccess) return nullptr;
    if (conn == nullptr) usleep(1000);
  }
  return conn;
}

// Posts one request and tests it until it is done, fails, or the deadline passes.
ncclResult_t complete(SocketNetConn* conn, bool isSend, void* data, size_t bytes, int tag, Clock::time_point until,
                      size_t* size) {
  SocketNetRequest* r = nullptr;
  ncclResult_t result = conn->post(isSend, data, bytes, tag, &r);
  bool done = false;
  while (result == ncclSuccess && !done && Clock::now() < until) result = conn->test(r, &done, size);
  return result == ncclSuccess && !done ? ncclInProgress : result;
}

// Moves kStreamBytes messages one after another until an error or `limit`.
StreamResult stream(SocketNetConn* conn, bool isSend, std::chrono::seconds limit) {
  std::vector<char> buf(kStreamBytes, 5);
  const auto until = Clock::now() + limit;
  StreamResult out;
  out.result = ncclSuccess;
  while (Clock::now() < until) {
    size_t size = 0;
    const ncclResult_t r = complete(conn, isSend, buf.data(), buf.size(), 0, until, &size);
    if (r == ncclInProgress) break;
    if (r != ncclSuccess) {
      out.result = r;
      break;
    }
    out.bytes += kStreamBytes;
  }
  out.atNs = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  return out;
}

class SocketNetNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string id = std::to_string(getpid());
    nsA_ = "braid-a-" + id;
    nsB_ = "braid-b-" + id;
    vethA_ = "bra" + id;
    vethB_ = "brb" + id;
    if (sh("ip netns add " + nsA_) != 0)
      GTEST_SKIP() << "'ip netns add' failed: this test needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2";
    created_ = true;
    ASSERT_EQ(sh("ip netns add " + nsB_), 0);
    ASSERT_EQ(sh("ip link add " + vethA_ + " netns " + nsA_ + " type veth peer name " + vethB_ + " netns " + nsB_), 0);
    ASSERT_EQ(sh("ip -n " + nsA_ + " addr add " + kAddrA + "/24 dev " + vethA_), 0);
    ASSERT_EQ(sh("ip -n " + nsB_ + " addr add " + kAddrB + "/24 dev " + vethB_), 0);
    for (const std::string& ns : {nsA_, nsB_}) ASSERT_EQ(sh("ip -n " + ns + " link set lo up"), 0);
    ASSERT_EQ(sh("ip -n " + nsA_ + " link set " + vethA_ + " up"), 0);
    ASSERT_EQ(sh("ip -n " + nsB_ + " link set " + vethB_ + " up"), 0);
  }

  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (!created_) return;
    sh("ip netns del " + nsA_);  // takes the veth pair with it
    sh("ip netns del " + nsB_);
  }

  // Runs `body` in a child process inside namespace `ns`; its return value is the exit code.
  pid_t spawnIn(const std::string& ns, const std::function<int()>& body) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(90);
      close(fd);
      _exit(body());
    }
    children_.push_back(pid);
    return pid;
  }

  // Exit code of a child (100 + signal if it was killed); forgets it.
  int reap(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    children_.erase(std::find(children_.begin(), children_.end(), pid));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
  }

  // A listens in its namespace, B connects from its own; each then runs its part with the
  // connection. `timeoutMs` sets BRAID_NET_SOCKET_TIMEOUT_MS in both.
  void startPair(const std::function<int(SocketNetConn*)>& a, const std::function<int(SocketNetConn*)>& b,
                 int64_t timeoutMs) {
    handle_ = std::make_unique<Pipe>();
    const std::string timeout = std::to_string(timeoutMs);
    pidA_ = spawnIn(nsA_, [&, timeout]() {
      setenv("BRAID_NET_SOCKET_TIMEOUT_MS", timeout.c_str(), 1);
      paramsReset();
      SocketAddress local{};
      if (socketAddressParse(std::string(kAddrA) + ":1", AF_INET, "test", &local) != ncclSuccess) return 2;
      socketAddressSetPort(&local, 0);
      SocketNetHandle handle{};
      std::unique_ptr<SocketNetListener> listener;
      if (SocketNetListener::listen(local, &handle, &listener) != ncclSuccess) return 3;
      if (!handle_->put(&handle, sizeof(handle))) return 4;
      std::unique_ptr<SocketNetConn> conn = acceptWithin(listener.get(), std::chrono::seconds(10));
      if (conn == nullptr) return 5;
      return a(conn.get());
    });
    pidB_ = spawnIn(nsB_, [&, timeout]() {
      setenv("BRAID_NET_SOCKET_TIMEOUT_MS", timeout.c_str(), 1);
      paramsReset();
      SocketNetHandle handle{};
      if (!handle_->get(&handle, sizeof(handle))) return 2;
      std::unique_ptr<SocketNetConn> conn;
      if (socketNetConnect(handle, 4, &conn) != ncclSuccess) return 3;
      return b(conn.get());
    });
  }

  std::string nsA_, nsB_, vethA_, vethB_;
  bool created_ = false;
  std::vector<pid_t> children_;
  std::unique_ptr<Pipe> handle_;
  pid_t pidA_ = -1;
  pid_t pidB_ = -1;
};

// Every size class: empty, inline on the control socket, split over the 4 data sockets, and sizes
// that do not divide evenly; random contents, tags in order.
TEST_F(SocketNetNetns, MessagesOfEverySizeCrossTheVethIntact) {
  const std::vector<size_t> sizes = {0, 1, 4097, 64 << 10, (64 << 10) + 1, (3 << 20) + 5, 16 << 20};
  const auto until = [] { return Clock::now() + std::chrono::seconds(20); };
  startPair(
      [&](SocketNetConn* conn) {
        std::vector<char> buf(16 << 20);
        for (size_t i = 0; i < sizes.size(); i++) {
          size_t size = 0;
          std::fill(buf.begin(), buf.end(), 0x5a);
          if (complete(conn, false, buf.data(), buf.size(), static_cast<int>(i), until(), &size) != ncclSuccess)
            return 10 + static_cast<int>(i);
          if (size != sizes[i]) return 30 + static_cast<int>(i);
          if (std::memcmp(buf.data(), patternBytes(size, static_cast<uint32_t>(i)).data(), size) != 0)
            return 50 + static_cast<int>(i);
        }
        return 0;
      },
      [&](SocketNetConn* conn) {
        for (size_t i = 0; i < sizes.size(); i++) {
          std::vector<char> msg = patternBytes(sizes[i], static_cast<uint32_t>(i));
          if (complete(conn, true, msg.data(), msg.size(), static_cast<int>(i), until(), nullptr) != ncclSuccess)
            return 10 + static_cast<int>(i);
        }
        return 0;
      },
      30000);
  EXPECT_EQ(reap(pidA_), 0);
  EXPECT_EQ(reap(pidB_), 0);
}

// Both ends stream; the parent takes A's end of the veth down. Each end reports its first error
// and when it came: both must be ncclRemoteError within a few timeouts of the link going down.
TEST_F(SocketNetNetns, ADroppedLinkFailsBothEndsWithinTheTimeout) {
  constexpr int64_t kTimeoutMs = 1500;
  Pipe ready;
  Pipe results;
  auto streamer = [&](bool isSend) {
    return [&, isSend](SocketNetConn* conn) {
      if (!ready.put("r", 1)) return 6;
      const StreamResult r = stream(conn, isSend, std::chrono::seconds(40));
      return results.put(&r, sizeof(r)) ? 0 : 7;
    };
  };
  startPair(streamer(false), streamer(true), kTimeoutMs);
  ready.closeWrite();
  results.closeWrite();
  char c[2];
  ASSERT_TRUE(ready.get(c, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // data is flowing
  const auto downAt = Clock::now();
  ASSERT_EQ(sh("ip -n " + nsA_ + " link set " + vethA_ + " down"), 0);
  for (int end = 0; end < 2; end++) {
    StreamResult r;
    ASSERT_TRUE(results.get(&r, sizeof(r)));
    const double seconds =
        std::chrono::duration<double>(Clock::time_point(std::chrono::nanoseconds(r.atNs)) - downAt).count();
    EXPECT_GT(r.bytes, 0u) << "nothing moved before the link went down";
    EXPECT_EQ(r.result, ncclRemoteError) << "an end stopped after " << seconds << " s";
    EXPECT_LT(seconds, 4.0 * kTimeoutMs / 1000) << "noticed the dropped link too late";
  }
  EXPECT_EQ(reap(pidA_), 0);
  EXPECT_EQ(reap(pidB_), 0);
}

// B streams to A across the veth; the parent kills B. A's receive fails with ncclRemoteError at
// once (the kernel of B's namespace resets the connections), not after the timeout.
TEST_F(SocketNetNetns, APeerKilledMidStreamIsARemoteErrorAtOnce) {
  Pipe ready;
  Pipe results;
  startPair(
      [&](SocketNetConn* conn) {
        const StreamResult r = stream(conn, false, std::chrono::seconds(40));
        return results.put(&r, sizeof(r)) ? 0 : 7;
      },
      [&](SocketNetConn* conn) {
        if (!ready.put("r", 1)) return 6;
        (void)stream(conn, true, std::chrono::seconds(40));
        return 8;
      },
      30000);
  ready.closeWrite();
  results.closeWrite();
  char c = 0;
  ASSERT_TRUE(ready.get(&c, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto killedAt = Clock::now();
  ASSERT_EQ(kill(pidB_, SIGKILL), 0);
  EXPECT_EQ(reap(pidB_), 100 + SIGKILL);
  StreamResult r;
  ASSERT_TRUE(results.get(&r, sizeof(r)));
  const double seconds =
      std::chrono::duration<double>(Clock::time_point(std::chrono::nanoseconds(r.atNs)) - killedAt).count();
  EXPECT_EQ(r.result, ncclRemoteError);
  EXPECT_GT(r.bytes, 0u);
  EXPECT_LT(seconds, 2.0) << "the receiver waited for the timeout instead of seeing the reset";
  EXPECT_EQ(reap(pidA_), 0);
}

}  // namespace
}  // namespace braid::net
