// Authentication of Braid's TCP connections (util/socket_auth.h) on loopback: strangers who know
// only a public magic, peers with another secret and replayed handshakes are refused; the real
// ranks complete; the secret never reaches the log.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket.h"

namespace braid {
namespace {

using std::chrono::milliseconds;
constexpr uint64_t kMagic = 0x0123456789abcdefull;
constexpr char kSecret[] = "s3cret-of-this-job-7f2a";
constexpr char kWrongSecret[] = "not-the-secret-19c4";

SocketAddress loopback() {
  SocketAddress addr{};
  addr.sin.sin_family = AF_INET;
  addr.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

Deadline soon() { return Deadline::after(milliseconds(3000)); }

// Serves `acceptor` while a connect in the same thread waits for its answer.
SocketPump pumpOf(SocketAcceptor* acceptor) {
  return [acceptor](int fd) {
    std::vector<pollfd> fds{pollfd{fd, POLLIN, 0}};
    acceptor->addPollFds(&fds);
    (void)::poll(fds.data(), fds.size(), kSocketPollSliceMs);
    return acceptor->progress();
  };
}

// Progresses `acceptor` for `ms`; true if a connection completed.
bool acceptsWithin(SocketAcceptor* acceptor, int ms) {
  const auto until = std::chrono::steady_clock::now() + milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_EQ(acceptor->progress(), ncclSuccess);
    AcceptedConnection conn;
    if (acceptor->takeReady(&conn)) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return false;
}

int rawConnect(const SocketAddress& to) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(fd, &to.sa, socketAddressLength(to)), 0);
  return fd;
}

// Reads until the peer closes or 2 s pass.
std::string readToEnd(int fd) {
  std::string got;
  char buffer[256];
  for (int i = 0; i < 100; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream s;
  s << file.rdbuf();
  return s.str();
}

class CommSecretTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.clear({"BRAID_COMM_SECRET", "BRAID_COMM_SECRET_FILE", "NCCL_COMM_ID", "NCCL_SOCKET_IFNAME",
                "NCCL_BOOTSTRAP_TIMEOUT", "NCCL_SOCKET_RETRY_SLEEP_MSEC", "NCCL_DEBUG", "NCCL_DEBUG_FILE",
                "NCCL_DEBUG_SUBSYS"});
    char dir[] = "/tmp/braid_comm_secret_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "ALL", 1);
    setenv("NCCL_DEBUG_FILE", (dir_ + "/braid.%p.log").c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_BOOTSTRAP_TIMEOUT", "5", 1);
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
  void setEnv(const char* name, const char* value) {
    setenv(name, value, 1);
    paramsReset();
  }
  // Everything every process of the test logged.
  std::string allLogs() {
    logReset();  // flushes and closes this process's file
    std::string text;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() == ".log") text += readFile(entry.path().string());
    }
    return text;
  }
  SocketAcceptor listenWith(const char* secret) {
    if (secret != nullptr) setEnv("BRAID_COMM_SECRET", secret);
    Socket listener;
    EXPECT_EQ(Socket::listen(loopback(), kMagic, SocketType::kBootstrap, &listener), ncclSuccess);
    return SocketAcceptor(std::move(listener), 4);
  }

  testing::ScopedEnv env_;
  std::string dir_;
};

TEST_F(CommSecretTest, MatchingSecretsConnectAndAnotherSecretIsRefused) {
  SocketAcceptor acceptor = listenWith(kSecret);
  const SocketAddress where = acceptor.listener().localAddress();
  Socket good;
  ASSERT_EQ(Socket::connect(where, kMagic, SocketType::kBootstrap, "listener", false, soon(), &good, pumpOf(&acceptor)),
            ncclSuccess);
  ASSERT_EQ(good.sendAll("ping", 4, soon()), ncclSuccess);
  AcceptedConnection conn;
  ASSERT_EQ(acceptor.accept(soon(), &conn), ncclSuccess);
  EXPECT_EQ(std::string(conn.hello.begin(), conn.hello.end()), "ping");

  // The same magic with another secret, and with none: refused by the listener, and the connector
  // is told so.
  for (const char* other : {kWrongSecret, ""}) {
    if (*other != '\0') {
      setEnv("BRAID_COMM_SECRET", other);
    } else {
      unsetenv("BRAID_COMM_SECRET");
      paramsReset();
    }
    Socket bad;
    EXPECT_EQ(
        Socket::connect(where, kMagic, SocketType::kBootstrap, "listener", false, soon(), &bad, pumpOf(&acceptor)),
        ncclRemoteError);
    EXPECT_NE(std::string(logLastError()).find("refused it"), std::string::npos) << logLastError();
    EXPECT_FALSE(acceptsWithin(&acceptor, 100));
  }

  // The secret from a file (first line) is the same secret.
  const std::string path = dir_ + "/secret";
  std::ofstream(path) << kSecret << "\nsecond line ignored\n";
  unsetenv("BRAID_COMM_SECRET");
  setEnv("BRAID_COMM_SECRET_FILE", path.c_str());
  Socket fromFile;
  EXPECT_EQ(
      Socket::connect(where, kMagic, SocketType::kBootstrap, "listener", false, soon(), &fromFile, pumpOf(&acceptor)),
      ncclSuccess);

  // An unreadable file is an error naming the file.
  setEnv("BRAID_COMM_SECRET_FILE", (dir_ + "/missing").c_str());
  Socket none;
  EXPECT_EQ(Socket::connect(where, kMagic, SocketType::kBootstrap, "listener", false, soon(), &none), ncclInvalidUsage);
  EXPECT_NE(std::string(logLastError()).find("/missing"), std::string::npos) << logLastError();

  const std::string logs = allLogs();
  EXPECT_NE(logs.find("does not prove it knows this job's secret"), std::string::npos);
  EXPECT_EQ(logs.find(kSecret), std::string::npos);
  EXPECT_EQ(logs.find(kWrongSecret), std::string::npos);
  EXPECT_EQ(logs.find("123456789abcdef"), std::string::npos) << "the magic reached the log";
}

// A relay between a real connector and a real listener records what each sends; replaying either
// side's bytes to a fresh challenge does not get in.
TEST_F(CommSecretTest, ReplayedHandshakeIsRefused) {
  SocketAcceptor acceptor = listenWith(kSecret);
  const SocketAddress real = acceptor.listener().localAddress();
  Socket relayListener;
  ASSERT_EQ(Socket::listen(loopback(), 1, SocketType::kBootstrap, &relayListener), ncclSuccess);
  std::string toAcceptor, toConnector;  // the recorded transcript
  std::thread relay([&] {
    pollfd lp{relayListener.fd(), POLLIN, 0};
    ASSERT_GT(::poll(&lp, 1, 3000), 0);
    const int a = ::accept(relayListener.fd(), nullptr, nullptr);
    const int b = rawConnect(real);
    for (bool open = true; open;) {
      pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (::poll(fds, 2, 3000) <= 0) break;
      for (int i = 0; i < 2 && open; ++i) {
        if (fds[i].revents == 0) continue;
        char buffer[512];
        const ssize_t n = ::recv(fds[i].fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
          open = false;
          break;
        }
        (i == 0 ? toAcceptor : toConnector).append(buffer, static_cast<size_t>(n));
        ASSERT_EQ(::send(i == 0 ? b : a, buffer, static_cast<size_t>(n), MSG_NOSIGNAL), n);
      }
    }
    ::close(a);
    ::close(b);
  });
  {
    Socket client;
    ASSERT_EQ(Socket::connect(relayListener.localAddress(), kMagic, SocketType::kBootstrap, "relay", false, soon(),
                              &client, pumpOf(&acceptor)),
              ncclSuccess);
    ASSERT_EQ(client.sendAll("ping", 4, soon()), ncclSuccess);
    AcceptedConnection conn;
    ASSERT_EQ(acceptor.accept(soon(), &conn), ncclSuccess);
  }  // both ends close: the relay ends
  relay.join();
  ASSERT_EQ(toAcceptor.size(), kSocketHandshakeBytes + 4);
  ASSERT_EQ(toConnector.size(), kSocketNonceBytes + kSocketProofBytes);

  // The connector's recorded answer, sent to a new challenge: no proof back, no connection.
  const int replay = rawConnect(real);
  ASSERT_EQ(::send(replay, toAcceptor.data(), toAcceptor.size(), 0), static_cast<ssize_t>(toAcceptor.size()));
  EXPECT_FALSE(acceptsWithin(&acceptor, 300));
  const std::string answer = readToEnd(replay);
  ::close(replay);
  ASSERT_EQ(answer.size(), kSocketNonceBytes) << "the listener sent more than its challenge";
  EXPECT_NE(answer, toConnector.substr(0, kSocketNonceBytes)) << "a challenge was reused";

  // The listener's recorded side, played to a new connector: its proof does not match the fresh
  // connector nonce, so the connector refuses it.
  Socket fake;
  ASSERT_EQ(Socket::listen(loopback(), 1, SocketType::kBootstrap, &fake), ncclSuccess);
  std::thread impostor([&] {
    pollfd lp{fake.fd(), POLLIN, 0};
    ASSERT_GT(::poll(&lp, 1, 3000), 0);
    const int c = ::accept(fake.fd(), nullptr, nullptr);
    ASSERT_EQ(::send(c, toConnector.data(), kSocketNonceBytes, 0), static_cast<ssize_t>(kSocketNonceBytes));
    char reply[kSocketHandshakeBytes];
    EXPECT_EQ(::recv(c, reply, sizeof(reply), MSG_WAITALL), static_cast<ssize_t>(sizeof(reply)));
    (void)::send(c, toConnector.data() + kSocketNonceBytes, kSocketProofBytes, MSG_NOSIGNAL);
    (void)readToEnd(c);
    ::close(c);
  });
  Socket victim;
  EXPECT_EQ(Socket::connect(fake.localAddress(), kMagic, SocketType::kBootstrap, "impostor", false, soon(), &victim),
            ncclRemoteError);
  EXPECT_NE(std::string(logLastError()).find("without proving it knows this job's secret"), std::string::npos)
      << logLastError();
  victim.close();
  impostor.join();
  EXPECT_EQ(allLogs().find(kSecret), std::string::npos);
}

// Runs fn in a child process (its own log file) and returns its exit code, or -1 after 20 s.
pid_t spawn(const std::function<int()>& fn) {
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    logReset();
    _exit(fn());
  }
  return pid;
}

int waitFor(pid_t pid) {
  for (int i = 0; i < 2000; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Creates a 2-rank bootstrap from NCCL_COMM_ID as `rank` and checks an allGather.
int commIdRank(int rank) {
  ncclUniqueId id;
  if (bootstrapGetUniqueId(&id) != ncclSuccess) return 90;
  std::unique_ptr<Bootstrap> bs;
  const ncclResult_t rc = Bootstrap::create(&id, 1, rank, 2, nullptr, &bs);
  if (rc != ncclSuccess) return rc;
  int slots[2] = {-1, -1};
  slots[rank] = 1000 + rank;
  if (bs->allGather(slots, sizeof(int)) != ncclSuccess) return 91;
  return slots[0] == 1000 && slots[1] == 1001 ? 0 : 92;
}

// Under NCCL_COMM_ID the magic is public. With a secret set, strangers that know it (with no
// secret, or another one) are refused by rank 0's root before they can claim rank 1, and the real
// ranks complete; nothing logs the secret.
TEST_F(CommSecretTest, CommIdStrangersAreRefusedAndTheRanksComplete) {
  Socket probe;
  ASSERT_EQ(Socket::listen(loopback(), 1, SocketType::kBootstrap, &probe), ncclSuccess);
  const std::string where = socketAddressToString(probe.localAddress());
  probe.close();
  setEnv("NCCL_COMM_ID", where.c_str());
  setEnv("NCCL_SOCKET_RETRY_SLEEP_MSEC", "10");
  setEnv("BRAID_COMM_SECRET", kSecret);
  const pid_t rank0 = spawn([] { return commIdRank(0); });
  std::vector<pid_t> strangers;
  for (const char* secret : {"", kWrongSecret}) {
    strangers.push_back(spawn([secret] {
      std::this_thread::sleep_for(milliseconds(100));
      if (*secret == '\0') {
        unsetenv("BRAID_COMM_SECRET");
      } else {
        setenv("BRAID_COMM_SECRET", secret, 1);
      }
      paramsReset();
      return commIdRank(1);
    }));
  }
  const pid_t rank1 = spawn([] {
    std::this_thread::sleep_for(milliseconds(600));
    return commIdRank(1);
  });
  for (pid_t s : strangers) EXPECT_EQ(waitFor(s), ncclRemoteError) << "a stranger got in";
  EXPECT_EQ(waitFor(rank0), 0);
  EXPECT_EQ(waitFor(rank1), 0);
  const std::string logs = allLogs();
  EXPECT_NE(logs.find("does not prove it knows this job's secret"), std::string::npos);
  EXPECT_NE(logs.find("BRAID_COMM_SECRET set by environment to <hidden>"), std::string::npos);
  EXPECT_NE(logs.find("is unauthenticated"), std::string::npos) << "the stranger without a secret is warned";
  EXPECT_EQ(logs.find(kSecret), std::string::npos);
  EXPECT_EQ(logs.find(kWrongSecret), std::string::npos);
}

}  // namespace
}  // namespace braid
