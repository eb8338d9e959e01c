// The built-in socket network between two network namespaces joined by two veth pairs: the closest
// one machine gets to two hosts with two NICs, whose links can be taken down. Messages of every size
// class cross intact; a peer killed mid-stream and a link dropped mid-stream both end in
// ncclRemoteError on the surviving side(s) within the timeout (BRAID_NET_SOCKET_TIMEOUT_MS), never a
// hang; the two links are two devices of the plugin table, and a link down fails only the
// connections made on its device.
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
#include "net/socket_net_plugin.h"
#include "util/params.h"

namespace braid::net {
namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: comparable across processes

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

// One message through the plugin table (as the proxy moves them): registers, posts, tests until
// done, an error, or `limit`; ncclInProgress if it never finished.
ncclResult_t moveOne(const ncclNet_v11_t& net, void* comm, bool isSend, std::vector<char>* buf,
                     std::chrono::milliseconds limit) {
  void* mh = nullptr;
  ncclResult_t r = net.regMr(comm, buf->data(), buf->size(), NCCL_PTR_HOST, &mh);
  if (r != ncclSuccess) return r;
  void* req = nullptr;
  if (isSend) {
    r = net.isend(comm, buf->data(), buf->size(), 1, mh, nullptr, &req);
  } else {
    void* data[1] = {buf->data()};
    size_t sizes[1] = {buf->size()};
    int tags[1] = {1};
    void* mhs[1] = {mh};
    r = net.irecv(comm, 1, data, sizes, tags, mhs, nullptr, &req);
  }
  int done = 0;
  const auto until = Clock::now() + limit;
  while (r == ncclSuccess && done == 0 && Clock::now() < until) r = net.test(req, &done, nullptr);
  (void)net.deregMr(comm, mh);
  return r == ncclSuccess && done == 0 ? ncclInProgress : r;
}

class SocketNetNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string id = std::to_string(getpid());
    nsA_ = "braid-a-" + id;
    nsB_ = "braid-b-" + id;
    if (sh("ip netns add " + nsA_) != 0)
      GTEST_SKIP() << "'ip netns add' failed: this test needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2";
    created_ = true;
    ASSERT_EQ(sh("ip netns add " + nsB_), 0);
    for (const std::string& ns : {nsA_, nsB_}) ASSERT_EQ(sh("ip -n " + ns + " link set lo up"), 0);
    // Two links, as two NICs: k = 0, 1 joins braK<pid> (10.213.k.1) in A to brbK<pid> (10.213.k.2) in B.
    ifPrefixA_ = "bra" + id;
    ifPrefixB_ = "brb" + id;
    for (int k = 0; k < 2; k++) {
      const std::string a = vethA(k);
      const std::string b = ifPrefixB_ + std::to_string(k);
      ASSERT_EQ(sh("ip link add " + a + " netns " + nsA_ + " type veth peer name " + b + " netns " + nsB_), 0);
      ASSERT_EQ(sh("ip -n " + nsA_ + " addr add " + addrA(k) + "/24 dev " + a), 0);
      ASSERT_EQ(sh("ip -n " + nsB_ + " addr add 10.213." + std::to_string(k) + ".2/24 dev " + b), 0);
      ASSERT_EQ(sh("ip -n " + nsA_ + " link set " + a + " up"), 0);
      ASSERT_EQ(sh("ip -n " + nsB_ + " link set " + b + " up"), 0);
    }
    // A veth pair reports carrier a moment after both ends are up; until then the interfaces are
    // not "running" and the Socket network will not list them.
    for (int k = 0; k < 2; k++) {
      ASSERT_TRUE(waitRunning(nsA_, vethA(k))) << vethA(k);
      ASSERT_TRUE(waitRunning(nsB_, ifPrefixB_ + std::to_string(k))) << ifPrefixB_ << k;
    }
  }

  static bool waitRunning(const std::string& ns, const std::string& dev) {
    for (int i = 0; i < 500; i++) {
      if (sh("ip -n " + ns + " link show dev " + dev + " | grep -q LOWER_UP") == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string vethA(int k) const { return ifPrefixA_ + std::to_string(k); }
  static std::string addrA(int k) { return "10.213." + std::to_string(k) + ".1"; }

  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (!created_) return;
    sh("ip netns del " + nsA_);  // takes the veth pairs with it
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
      if (socketAddressParse(addrA(0) + ":1", AF_INET, "test", &local) != ncclSuccess) return 2;
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

  std::string nsA_, nsB_, ifPrefixA_, ifPrefixB_;
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
  ASSERT_EQ(sh("ip -n " + nsA_ + " link set " + vethA(0) + " down"), 0);
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

// Two links are two devices of the Socket network, and each device's connections travel on their
// own link: after link 0 goes down, the connection made on device 1 still carries a message intact
// and the one on device 0 fails with ncclRemoteError (the proxy's channels spread over devices,
// so a dead NIC fails the communicator instead of hanging it).
TEST_F(SocketNetNetns, TwoLinksAreTwoDevicesAndALinkDownFailsOnlyItsConnections) {
  constexpr size_t kBytes = size_t{1} << 20;
  Pipe handles;
  Pipe ready;
  Pipe go;
  Pipe results;
  auto openNet = [](const std::string& ifPrefix, void** ctx) {
    setenv("NCCL_SOCKET_IFNAME", ifPrefix.c_str(), 1);
    setenv("BRAID_NET_SOCKET_TIMEOUT_MS", "1500", 1);
    paramsReset();
    ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    int ndev = 0;
    if (socketNetPlugin().init(ctx, 7, &config, nullptr, nullptr) != ncclSuccess) return -1;
    if (socketNetPlugin().devices(&ndev) != ncclSuccess) return -1;
    return ndev;
  };
  const std::string prefixA = ifPrefixA_;
  const std::string prefixB = ifPrefixB_;
  pidA_ = spawnIn(nsA_, [&, prefixA]() {
    const ncclNet_v11_t& net = socketNetPlugin();
    void* ctx = nullptr;
    if (openNet(prefixA, &ctx) != 2) return 2;
    char handle[2][NCCL_NET_HANDLE_MAXSIZE];
    void* listen[2] = {};
    void* recv[2] = {};
    for (int d = 0; d < 2; d++) {
      ncclNetProperties_v11_t props{};
      if (net.getProperties(d, &props) != ncclSuccess || std::string(props.name) != prefixA + std::to_string(d))
        return 3;
      if (net.listen(ctx, d, handle[d], &listen[d]) != ncclSuccess) return 4;
    }
    if (!handles.put(handle, sizeof(handle))) return 5;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while ((recv[0] == nullptr || recv[1] == nullptr) && Clock::now() < until) {
      for (int d = 0; d < 2; d++)
        if (recv[d] == nullptr && net.accept(listen[d], &recv[d], nullptr) != ncclSuccess) return 6;
    }
    if (recv[0] == nullptr || recv[1] == nullptr) return 7;
    int32_t result[4] = {-1, -1, -1, -1};  // round 1 on devices 0 and 1, then round 2
    for (int round = 0; round < 2; round++) {
      if (round == 1) {
        char c = 0;
        if (!ready.put("a", 1) || !go.get(&c, 1)) return 8;
      }
      for (int d = 1; d >= 0; d--) {  // device 1 first: device 0 waits for its timeout in round 2
        std::vector<char> buf(kBytes, 0);
        const ncclResult_t r = moveOne(net, recv[d], false, &buf, std::chrono::seconds(10));
        const bool intact = buf == patternBytes(kBytes, static_cast<uint32_t>(10 * round + d));
        result[2 * round + d] = r == ncclSuccess && !intact ? -2 : r;
      }
    }
    return results.put(result, sizeof(result)) ? 0 : 9;
  });
  pidB_ = spawnIn(nsB_, [&, prefixB]() {
    const ncclNet_v11_t& net = socketNetPlugin();
    void* ctx = nullptr;
    if (openNet(prefixB, &ctx) != 2) return 2;
    char handle[2][NCCL_NET_HANDLE_MAXSIZE];
    if (!handles.get(handle, sizeof(handle))) return 3;
    void* send[2] = {};
    const auto until = Clock::now() + std::chrono::seconds(10);
    while ((send[0] == nullptr || send[1] == nullptr) && Clock::now() < until) {
      for (int d = 0; d < 2; d++)
        if (send[d] == nullptr && net.connect(ctx, d, handle[d], &send[d], nullptr) != ncclSuccess) return 4;
    }
    if (send[0] == nullptr || send[1] == nullptr) return 5;
    for (int round = 0; round < 2; round++) {
      if (round == 1) {
        char c = 0;
        if (!ready.put("b", 1) || !go.get(&c, 1)) return 6;
      }
      for (int d = 1; d >= 0; d--) {
        std::vector<char> buf = patternBytes(kBytes, static_cast<uint32_t>(10 * round + d));
        // Round 2 on device 0 may fail or may end in the socket's buffers: A's side decides.
        if (moveOne(net, send[d], true, &buf, std::chrono::seconds(10)) != ncclSuccess && !(round == 1 && d == 0))
          return 10 + 2 * round + d;
      }
    }
    char c = 0;
    (void)go.get(&c, 1);  // stay connected until A has its results
    return 0;
  });
  handles.closeWrite();
  ready.closeWrite();
  results.closeWrite();
  char c[2];
  if (!ready.get(c, 2)) {
    go.closeWrite();  // a child waiting for it ends
    const int a = reap(pidA_);
    FAIL() << "a child failed in round 1: exit codes A " << a << ", B " << reap(pidB_);
  }
  ASSERT_EQ(sh("ip -n " + nsA_ + " link set " + vethA(0) + " down"), 0);
  ASSERT_TRUE(go.put("gg", 2));
  int32_t result[4];
  const bool got = results.get(result, sizeof(result));
  ASSERT_TRUE(go.put("g", 1));
  EXPECT_EQ(reap(pidA_), 0);
  EXPECT_EQ(reap(pidB_), 0);
  ASSERT_TRUE(got);
  EXPECT_EQ(result[0], ncclSuccess) << "round 1, device 0 (-2: the data differed)";
  EXPECT_EQ(result[1], ncclSuccess) << "round 1, device 1";
  EXPECT_EQ(result[2], ncclRemoteError) << "round 2, device 0, its link down";
  EXPECT_EQ(result[3], ncclSuccess) << "round 2, device 1, its link up";
}

}  // namespace
}  // namespace braid::net
