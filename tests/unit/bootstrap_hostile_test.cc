// The bootstrap against hostile peers on loopback: a peer that knows the id's magic but lies in its
// check-in or its message headers, and a flood of silent connections under a low descriptor
// limit. The process under attack (a root, or a rank) runs in a fork()ed child, so that a crash
// shows as a failed test rather than killing the test binary; the real ranks that must still
// succeed are threads of this process.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "core/board_server.h"
#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Deadline soon() { return Deadline::after(milliseconds(5000)); }

// Exit status of `pid` once it ends within `limitMs` (then killed): the exit code, or 1000 + the
// signal that ended it, or -1 if it had to be killed.
int waitChild(pid_t pid, int limitMs) {
  auto end = Clock::now() + milliseconds(limitMs);
  int status = 0;
  while (Clock::now() < end) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

bool readFull(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

std::vector<std::string> warnLines(const std::string& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) {
    if (line.find("NCCL WARN") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// A process that serves one unique id (its root thread) until told to end; with `fdHeadroom` > 0
// its descriptor limit leaves only that many free once the root listens.
struct RootProcess {
  pid_t pid = -1;
  int control = -1;  // closing it ends the process
  ncclUniqueId id{};
  std::string log;

  void start(const std::string& logPath, int fdHeadroom) {
    log = logPath;
    int idPipe[2], ctlPipe[2];
    ASSERT_EQ(::pipe(idPipe), 0);
    ASSERT_EQ(::pipe(ctlPipe), 0);
    fflush(stdout);
    fflush(stderr);
    pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(idPipe[0]);
      ::close(ctlPipe[1]);
      setenv("NCCL_DEBUG_FILE", logPath.c_str(), 1);
      logReset();
      ncclUniqueId mine{};
      if (bootstrapGetUniqueId(&mine) != ncclSuccess) _exit(2);
      if (fdHeadroom > 0) {
        int open = 0;
        for (auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) open += entry.path().empty() ? 0 : 1;
        rlimit limit{static_cast<rlim_t>(open + fdHeadroom), static_cast<rlim_t>(open + fdHeadroom)};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(3);
      }
      if (::write(idPipe[1], &mine, sizeof(mine)) != static_cast<ssize_t>(sizeof(mine))) _exit(4);
      char byte;
      while (::read(ctlPipe[0], &byte, 1) > 0) {
      }
      _exit(0);
    }
    ::close(idPipe[1]);
    ::close(ctlPipe[0]);
    control = ctlPipe[1];
    ASSERT_TRUE(readFull(idPipe[0], &id, sizeof(id)));
    ::close(idPipe[0]);
  }
  // The exit status (0: it lived until now and ended normally).
  int stop() {
    ::close(control);
    return waitChild(pid, 5000);
  }
};

// Runs nranks real ranks as threads: create, then a barrier. Returns their results.
std::vector<ncclResult_t> runRealRanks(const ncclUniqueId& id, int nranks) {
  std::vector<ncclResult_t> results(static_cast<size_t>(nranks), ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> bs;
      ncclResult_t rc = Bootstrap::create(&id, 1, r, nranks, nullptr, &bs);
      if (rc == ncclSuccess) rc = bs->barrier();
      results[static_cast<size_t>(r)] = rc;
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

RootCheckIn checkIn(int rank, int nranks, const SocketAddress& listen, const char* host) {
  RootCheckIn in{};
  in.protocol = kBootstrapProtocol;
  in.kind = static_cast<uint32_t>(CheckInKind::kMember);
  in.rank = rank;
  in.nranks = nranks;
  in.nroots = 1;
  in.root = 0;
  in.timeoutMs = 20000;
  in.pid = static_cast<int32_t>(::getpid());
  in.listen = listen;
  std::snprintf(in.host, sizeof(in.host), "%s", host);
  return in;
}

class BootstrapHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.clear({"NCCL_SOCKET_IFNAME", "NCCL_BOOTSTRAP_TIMEOUT", "NCCL_COMM_ID", "NCCL_SOCKET_FAMILY", "NCCL_DEBUG",
                "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS"});
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_BOOTSTRAP_TIMEOUT", "20", 1);
    setenv("NCCL_DEBUG", "WARN", 1);
    char dir[] = "/tmp/braid_bootstrap_hostile_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    paramsReset();
    logReset();
  }
  void TearDown() override {
    env_.restore();
    paramsReset();
    logReset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  SocketAddress loopback() {
    SocketAddress addr{};
    addr.sin.sin_family = AF_INET;
    addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: any free one
    return addr;
  }

  testing::ScopedEnv env_;
  std::string dir_;
};

// A check-in with an absurd nranks (or other fields out of range) is refused alone: the root
// neither allocates for it nor fails the job, the real ranks complete, and the peer's host name
// reaches the root's log only in escaped form.
TEST_F(BootstrapHostileTest, MalformedCheckInsAreRefusedAndTheJobGoesOn) {
  RootProcess root;
  root.start(dir_ + "/root.log", 0);
  UniqueIdContents contents;
  ASSERT_EQ(uniqueIdDecode(root.id, 0, 1, &contents), ncclSuccess);
  const char* forged = "evil\n00:00 host:1:1 [0] NCCL WARN forged\x1b[2J";
  struct Lie {
    int rank, nranks, nroots, root;
    uint32_t kind;
  };
  for (const Lie& lie : {Lie{0, INT_MAX, 1, 0, 1}, Lie{5, 4000000, 1, 0, 1}, Lie{0, 2, 3, 0, 1}, Lie{0, 2, 1, 0, 7},
                         Lie{-1, 2, 1, 0, 1}}) {
    Socket sock;
    ASSERT_EQ(Socket::connect(contents.root, contents.magic, SocketType::kBootstrap, "root", false, soon(), &sock),
              ncclSuccess);
    RootCheckIn in = checkIn(lie.rank, lie.nranks, loopback(), forged);
    in.nroots = lie.nroots;
    in.root = lie.root;
    in.kind = lie.kind;
    ASSERT_EQ(sock.sendAll(&in, sizeof(in), soon()), ncclSuccess);
    RootReply reply{};
    size_t got = 0;
    ASSERT_EQ(sock.recvMsg(&reply, sizeof(reply), &got, soon()), ncclSuccess) << "nranks " << lie.nranks;
    EXPECT_EQ(reply.result, ncclInvalidUsage);
    EXPECT_NE(std::string(reply.message).find("refused"), std::string::npos) << reply.message;
  }
  for (ncclResult_t rc : runRealRanks(root.id, 3)) EXPECT_EQ(rc, ncclSuccess);
  EXPECT_EQ(root.stop(), 0) << "the root process did not survive";
  const std::vector<std::string> warns = warnLines(root.log);
  ASSERT_EQ(warns.size(), 1u) << "one refusal WARN per 10 s";
  EXPECT_NE(warns[0].find("evil\\x0a00:00"), std::string::npos) << warns[0];
  EXPECT_NE(warns[0].find("\\x1b[2J"), std::string::npos) << warns[0];
  // No line of the log starts with the text the peer tried to forge.
  std::ifstream file(root.log);
  for (std::string line; std::getline(file, line);) EXPECT_NE(line.rfind("00:00 host:1:1", 0), 0u) << line;
}

TEST_F(BootstrapHostileTest, TooManyRanksIsRefusedLocally) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  std::unique_ptr<Bootstrap> bs;
  EXPECT_EQ(Bootstrap::create(&id, 1, 0, kBootstrapMaxRanks + 1, nullptr, &bs), ncclInvalidArgument);
  const std::string warn = logLastError();
  EXPECT_NE(warn.find("more than the 1048576 ranks"), std::string::npos) << warn;
  for (ncclResult_t rc : runRealRanks(id, 1)) EXPECT_EQ(rc, ncclSuccess);  // lets the id's root finish
}

// A peer that takes a rank's place and then sends message headers that claim huge sizes: the
// rank refuses them at the header (an error for its operation), it allocates nothing for them,
// and it does not crash. The rank runs under an address-space limit that the claims exceed.
class HostilePeer {
 public:
  ~HostilePeer() {
    if (server_.joinable()) server_.join();
  }
  // Checks in as rank 1 of 2, completes rank 0's address exchange, and connects to rank 0.
  void join(const ncclUniqueId& id, const SocketAddress& local) {
    ASSERT_EQ(uniqueIdDecode(id, 0, 1, &contents_), ncclSuccess);
    Socket listener;
    ASSERT_EQ(Socket::listen(local, contents_.magic, SocketType::kBootstrap, &listener), ncclSuccess);
    listenAddr_ = listener.localAddress();
    // Rank 0 connects here for its allGather: answer its handshake, then leave its bytes unread.
    server_ = std::thread([this, acceptor = SocketAcceptor(std::move(listener), sizeof(PeerHello))]() mutable {
      AcceptedConnection conn;
      if (acceptor.accept(Deadline::after(std::chrono::milliseconds(5000)), &conn) == ncclSuccess) {
        fromRank0_ = std::move(conn.socket);
      }
    });
    Socket root;
    ASSERT_EQ(Socket::connect(contents_.root, contents_.magic, SocketType::kBootstrap, "root", false, soon(), &root),
              ncclSuccess);
    RootCheckIn in = checkIn(1, 2, listenAddr_, "peer");
    ASSERT_EQ(root.sendAll(&in, sizeof(in), soon()), ncclSuccess);
    RootReply reply{};
    size_t got = 0;
    ASSERT_EQ(root.recvMsg(&reply, sizeof(reply), &got, soon()), ncclSuccess);
    ASSERT_EQ(reply.result, ncclSuccess);
    ASSERT_EQ(Socket::connect(reply.next, contents_.magic, SocketType::kBootstrap, "rank 0", false, soon(), &toRank0_),
              ncclSuccess);
    PeerHello hello{kBootstrapProtocol, 1, 2, 0};
    ASSERT_EQ(toRank0_.sendAll(&hello, sizeof(hello), soon()), ncclSuccess);
    // Rank 0's allGather of listener addresses waits for slot 1 from us.
    send(PeerMsgKind::kAllGather, 1, sizeof(SocketAddress));
    ASSERT_EQ(toRank0_.sendAll(&listenAddr_, sizeof(SocketAddress), soon()), ncclSuccess);
  }
  void send(PeerMsgKind kind, int tag, uint64_t bytes) {
    PeerMsgHeader header{static_cast<uint32_t>(kind), tag, bytes};
    ASSERT_EQ(toRank0_.sendAll(&header, sizeof(header), soon()), ncclSuccess);
  }

 private:
  UniqueIdContents contents_;
  SocketAddress listenAddr_{};
  std::thread server_;  // takes rank 0's connection; its bytes wait in the kernel
  Socket fromRank0_;
  Socket toRank0_;
};

// Rank 0 in a child: create, signal `ready`, then recv(1, tag 5, 8 bytes); exits with the result.
pid_t startRank0(const ncclUniqueId& id, int* ready) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    rlimit limit{rlim_t{6} << 30, rlim_t{6} << 30};  // claims beyond this would throw std::bad_alloc
    (void)::setrlimit(RLIMIT_AS, &limit);
    // Nothing may return into the test framework from this child, not even an exception.
    try {
      std::unique_ptr<Bootstrap> bs;
      ncclResult_t rc = Bootstrap::create(&id, 1, 0, 2, nullptr, &bs);
      if (rc != ncclSuccess) _exit(100 + rc);
      char byte = 1;
      if (::write(fds[1], &byte, 1) != 1) _exit(99);
      char data[8];
      _exit(static_cast<int>(bs->recv(1, 5, data, sizeof(data))));
    } catch (...) {
      _exit(98);
    }
  }
  ::close(fds[1]);
  *ready = fds[0];
  return pid;
}

TEST_F(BootstrapHostileTest, OversizedMessageHeadersAreRefused) {
  struct Case {
    PeerMsgKind kind;
    int tag;
    uint64_t bytes;
    int expected;
  };
  // The awaited message claiming 64 GiB; an early message claiming 2 GiB (more than the queue of
  // early messages may hold); the awaited message 8 bytes larger than the receive.
  for (const Case& c : {Case{PeerMsgKind::kUser, 5, 1ull << 36, ncclInvalidUsage},
                        Case{PeerMsgKind::kUser, 9, 2ull << 30, ncclInternalError},
                        Case{PeerMsgKind::kUser, 5, 16, ncclInvalidUsage}}) {
    std::vector<ncclUniqueId> ids(1);
    ASSERT_EQ(bootstrapGetUniqueId(&ids[0]), ncclSuccess);
    int ready = -1;
    const auto start = Clock::now();
    pid_t rank0 = startRank0(ids[0], &ready);
    HostilePeer peer;
    peer.join(ids[0], loopback());
    if (HasFatalFailure()) {
      ::kill(rank0, SIGKILL);
      (void)waitChild(rank0, 1000);
      return;
    }
    char byte;
    ASSERT_TRUE(readFull(ready, &byte, 1)) << "rank 0 did not complete create";
    ::close(ready);
    peer.send(c.kind, c.tag, c.bytes);
    EXPECT_EQ(waitChild(rank0, 5000), c.expected) << "claim of " << c.bytes << " bytes with tag " << c.tag;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 4.0);
  }
}

// Silent connections flood a root whose process has few descriptors left: accept() fails with
// EMFILE, and the root drops the oldest silent connections to make room instead of giving up, so
// the real ranks still meet. It WARNs once per cause, not once per connection.
TEST_F(BootstrapHostileTest, RootSurvivesDescriptorExhaustion) {
  RootProcess root;
  root.start(dir_ + "/root.log", 24);
  UniqueIdContents contents;
  ASSERT_EQ(uniqueIdDecode(root.id, 0, 1, &contents), ncclSuccess);
  std::vector<int> flood;
  for (int i = 0; i < 500; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::connect(fd, &contents.root.sa, socketAddressLength(contents.root)), 0) << "connection " << i;
    flood.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(200));  // the root meets the flood first
  for (ncclResult_t rc : runRealRanks(root.id, 4)) EXPECT_EQ(rc, ncclSuccess);
  for (int fd : flood) ::close(fd);
  EXPECT_EQ(root.stop(), 0);
  const std::vector<std::string> warns = warnLines(root.log);
  EXPECT_GE(warns.size(), 1u);
  EXPECT_LE(warns.size(), 3u);
  bool sawDescriptors = false;
  for (const std::string& w : warns) sawDescriptors = sawDescriptors || w.find("EMFILE") != std::string::npos;
  EXPECT_TRUE(sawDescriptors) << "the flood did not exhaust the root's descriptors";
}

// The board server (core/board_server.cc) under the same flood: it keeps answering. The request
// and answer layouts are the server's wire format, repeated here.
TEST_F(BootstrapHostileTest, BoardServerSurvivesDescriptorExhaustion) {
  int addrPipe[2], ctlPipe[2];
  ASSERT_EQ(::pipe(addrPipe), 0);
  ASSERT_EQ(::pipe(ctlPipe), 0);
  fflush(stdout);
  fflush(stderr);
  const std::string log = dir_ + "/board.log";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(addrPipe[0]);
    ::close(ctlPipe[1]);
    setenv("NCCL_DEBUG_FILE", log.c_str(), 1);
    logReset();
    const SocketAddress address = boardServerAddress();
    int open = 0;
    for (auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) open += entry.path().empty() ? 0 : 1;
    rlimit limit{static_cast<rlim_t>(open + 16), static_cast<rlim_t>(open + 16)};
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(3);
    if (::write(addrPipe[1], &address, sizeof(address)) != static_cast<ssize_t>(sizeof(address))) _exit(4);
    char byte;
    while (::read(ctlPipe[0], &byte, 1) > 0) {
    }
    _exit(0);
  }
  ::close(addrPipe[1]);
  ::close(ctlPipe[0]);
  SocketAddress server{};
  ASSERT_TRUE(readFull(addrPipe[0], &server, sizeof(server)));
  ::close(addrPipe[0]);
  ASSERT_TRUE(socketAddressIsValid(server));
  std::vector<int> flood;
  for (int i = 0; i < 300; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(::connect(fd, &server.sa, socketAddressLength(server)), 0) << "connection " << i;
    flood.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(200));
  constexpr uint64_t kBoardServerMagic = 0x4252414944425244ull;
  struct {
    uint64_t commHash;
    int32_t rank, nRanks;
  } request{0x1234, 0, 1};
  struct {
    uint64_t magic;
    int64_t nowNs;
    uint64_t bytes;
  } answer{};
  Socket sock;
  ASSERT_EQ(Socket::connect(server, kBoardServerMagic, SocketType::kRas, "board server", false, soon(), &sock),
            ncclSuccess);
  ASSERT_EQ(sock.sendAll(&request, sizeof(request), soon()), ncclSuccess);
  ASSERT_EQ(sock.recvAll(&answer, sizeof(answer), soon()), ncclSuccess);
  EXPECT_EQ(answer.magic, kBoardServerMagic);
  EXPECT_EQ(answer.bytes, 0u);  // it has no such board, and says so
  for (int fd : flood) ::close(fd);
  ::close(ctlPipe[1]);
  EXPECT_EQ(waitChild(pid, 5000), 0);
  EXPECT_LE(warnLines(log).size(), 3u);
}

}  // namespace
}  // namespace braid
