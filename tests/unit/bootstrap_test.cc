// Bootstrap between processes on loopback: every rank is a fork()ed child that reports its result,
// its elapsed time and its last WARN through a pipe, then _exit()s. Unique ids are made in the
// parent (so the ncclGetUniqueId root threads live there), or in a separate child when a test
// needs to kill the root.
#include "bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/unique_id.h"
#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kNoReport = -1;       // the child crashed, hung or was killed
constexpr int kCheckFailed = 1000;  // a data check failed in the child; its text says which

struct Report {
  int32_t result;
  double seconds;
  char text[1536];
};

struct Outcome {
  int result = kNoReport;
  double seconds = 0;
  std::string text;
  int warns = 0;  // WARN lines the child logged (see BootstrapTest: every child logs to its own file)
};

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What a child runs: returns an ncclResult_t (or kCheckFailed) and may describe it in *text; by
// default the text is the child's last WARN.
using RankFn = std::function<int(int role, std::string* text)>;

// Where children log (NCCL_DEBUG_FILE with %p), so that the parent can count their WARN lines.
std::string gLogDir;

int countWarns(pid_t pid) {
  std::ifstream file(gLogDir + "/braid." + std::to_string(pid) + ".log");
  int count = 0;
  for (std::string line; std::getline(file, line);) count += line.find("NCCL WARN") != std::string::npos ? 1 : 0;
  return count;
}

[[noreturn]] void runChild(int role, const RankFn& fn, int fd) {
  // Re-read the logging settings: the output file must be this process's own (%p).
  logReset();
  auto start = Clock::now();
  std::string text;
  int result = fn(role, &text);
  Report report{};
  report.result = result;
  report.seconds = secondsSince(start);
  if (text.empty() && result != 0) text = logLastError();
  std::snprintf(report.text, sizeof(report.text), "%s", text.c_str());
  const char* p = reinterpret_cast<const char*>(&report);
  size_t left = sizeof(report);
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  _exit(0);
}

// Returns once the gate's write end is closed in every process.
void awaitGate(int fd) {
  char byte = 0;
  while (::read(fd, &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(fd);
}

// Forks one child per entry of `roles`, runs fn(role) in each and collects the reports. Children
// that have not reported within `limitSeconds` are killed (and reported as kNoReport).
// `afterFork` runs in the parent once every child is started.
//
// The children wait at a gate until all are forked: the ids' roots are threads of this process, and
// a child forked while a root serves its elder siblings could inherit a lock (OpenSSL's, over TLS)
// that the root held at that instant and that nothing in the child ever releases.
std::vector<Outcome> runChildren(const std::vector<int>& roles, const RankFn& fn, double limitSeconds = 40,
                                 const std::function<void()>& afterFork = nullptr) {
  struct Child {
    pid_t pid = -1;
    int fd = -1;
    Report report{};
    size_t got = 0;
  };
  std::vector<Child> children(roles.size());
  int gate[2];
  if (pipe(gate) != 0) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return std::vector<Outcome>(roles.size());
  }
  fflush(stdout);
  fflush(stderr);
  for (size_t i = 0; i < roles.size(); ++i) {
    int fds[2];
    if (pipe(fds) != 0) {
      ADD_FAILURE() << "pipe: " << strerror(errno);
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      ::close(fds[0]);
      ::close(gate[1]);
      awaitGate(gate[0]);
      runChild(roles[i], fn, fds[1]);
    }
    ::close(fds[1]);
    children[i].pid = pid;
    children[i].fd = fds[0];
  }
  ::close(gate[1]);  // every child reads the end of the gate's stream and starts
  ::close(gate[0]);
  if (afterFork) afterFork();
  auto start = Clock::now();
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Child*> open;
    for (Child& c : children) {
      if (c.fd >= 0) {
        fds.push_back(pollfd{c.fd, POLLIN, 0});
        open.push_back(&c);
      }
    }
    if (fds.empty() || secondsSince(start) > limitSeconds) break;
    ::poll(fds.data(), fds.size(), 50);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Child& c = *open[i];
      ssize_t n = ::read(c.fd, reinterpret_cast<char*>(&c.report) + c.got, sizeof(Report) - c.got);
      if (n > 0) c.got += static_cast<size_t>(n);
      if (n <= 0 || c.got == sizeof(Report)) {
        ::close(c.fd);
        c.fd = -1;
      }
    }
  }
  std::vector<Outcome> outcomes(children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    if (c.fd >= 0) {
      ::close(c.fd);
      if (c.pid > 0) kill(c.pid, SIGKILL);
    }
    if (c.pid > 0) waitpid(c.pid, nullptr, 0);
    if (c.got == sizeof(Report)) {
      c.report.text[sizeof(c.report.text) - 1] = '\0';
      outcomes[i] = Outcome{c.report.result, c.report.seconds, c.report.text, countWarns(c.pid)};
    }
  }
  return outcomes;
}

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

std::string describe(const std::vector<Outcome>& outcomes) {
  std::string s;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    s += "\n  child " + std::to_string(i) + ": result " + std::to_string(outcomes[i].result) + " after " +
         std::to_string(outcomes[i].seconds) + " s, " + std::to_string(outcomes[i].warns) +
         " WARN: " + outcomes[i].text;
  }
  return s;
}

#define BOOTCHECK(call)                                   \
  do {                                                    \
    ncclResult_t rc_ = (call);                            \
    if (rc_ != ncclSuccess) return static_cast<int>(rc_); \
  } while (0)

#define DATACHECK(cond, what)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      *text = std::string("rank ") + std::to_string(rank) + ": " + (what); \
      return kCheckFailed;                                                 \
    }                                                                      \
  } while (0)

unsigned char pattern(uint32_t seed, int rank, size_t i) {
  uint32_t x = seed ^ (static_cast<uint32_t>(rank) * 2654435761u) ^ static_cast<uint32_t>(i * 40503u);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return static_cast<unsigned char>(x);
}

// Everything a communicator's bootstrap does: create, allGather of random per-rank data, barrier,
// broadcast from the last rank, tagged messages around the ring received in another order than
// sent. On success the text is the create time in ms.
int exerciseBootstrap(const std::vector<ncclUniqueId>& ids, uint32_t seed, int rank, int nranks, std::string* text) {
  auto start = Clock::now();
  std::unique_ptr<Bootstrap> bs;
  BOOTCHECK(Bootstrap::create(ids.data(), static_cast<int>(ids.size()), rank, nranks, nullptr, &bs));
  double createMs = secondsSince(start) * 1e3;
  DATACHECK(bs->rank() == rank && bs->nranks() == nranks, "rank()/nranks()");

  const size_t kSlot = 37;
  std::vector<unsigned char> all(kSlot * static_cast<size_t>(nranks), 0xEE);
  for (size_t i = 0; i < kSlot; ++i) all[static_cast<size_t>(rank) * kSlot + i] = pattern(seed, rank, i);
  BOOTCHECK(bs->allGather(all.data(), kSlot));
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < kSlot; ++i) {
      DATACHECK(all[static_cast<size_t>(r) * kSlot + i] == pattern(seed, r, i),
                "allGather slot " + std::to_string(r) + " byte " + std::to_string(i));
    }
  }
  BOOTCHECK(bs->barrier());

  int root = nranks - 1;
  std::vector<unsigned char> bcast(100, 0);
  if (rank == root) {
    for (size_t i = 0; i < bcast.size(); ++i) bcast[i] = pattern(seed + 1, root, i);
  }
  BOOTCHECK(bs->broadcast(bcast.data(), bcast.size(), root));
  for (size_t i = 0; i < bcast.size(); ++i) DATACHECK(bcast[i] == pattern(seed + 1, root, i), "broadcast byte");

  int next = (rank + 1) % nranks;
  int prev = (rank + nranks - 1) % nranks;
  for (int tag : {11, 22, 33}) {
    int64_t value = rank * 1000 + tag;
    BOOTCHECK(bs->send(next, tag, &value, sizeof(value)));
  }
  for (int tag : {33, 11, 22}) {
    int64_t value = -1;
    BOOTCHECK(bs->recv(prev, tag, &value, sizeof(value)));
    DATACHECK(value == prev * 1000 + tag, "tagged message " + std::to_string(tag));
  }
  BOOTCHECK(bs->barrier());
  *text = std::to_string(createMs);
  return 0;
}

// Saves and sets the bootstrap variables for each test, restores them after.
class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.clear({"NCCL_SOCKET_IFNAME", "NCCL_BOOTSTRAP_TIMEOUT", "NCCL_COMM_ID", "NCCL_SOCKET_FAMILY",
                "NCCL_SOCKET_RETRY_SLEEP_MSEC", "NCCL_SOCKET_RETRY_CNT", "NCCL_DEBUG", "NCCL_DEBUG_FILE",
                "NCCL_DEBUG_SUBSYS", "BRAID_COMM_SECRET", "BRAID_COMM_SECRET_FILE"});
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_BOOTSTRAP_TIMEOUT", "20", 1);
    char dir[] = "/tmp/braid_bootstrap_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    gLogDir = dir;
    setenv("NCCL_DEBUG", "WARN", 1);
    setenv("NCCL_DEBUG_FILE", (gLogDir + "/braid.%p.log").c_str(), 1);
    logReset();
    seed_ = std::random_device()();
  }
  void TearDown() override {
    env_.restore();
    logReset();
    std::error_code ignored;
    std::filesystem::remove_all(gLogDir, ignored);
  }
  void setEnv(const char* name, const char* value) {
    setenv(name, value, 1);
    paramsReset();
  }

  std::vector<ncclUniqueId> makeIds(int n) {
    std::vector<ncclUniqueId> ids(static_cast<size_t>(n));
    for (ncclUniqueId& id : ids) EXPECT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
    return ids;
  }

  // Runs exerciseBootstrap on nranks children and checks that all succeed, each with
  // `expectedWarns` WARN lines.
  void runAll(const std::vector<ncclUniqueId>& ids, int nranks, int expectedWarns = 0) {
    uint32_t seed = seed_;
    auto outcomes = runChildren(
        iota(nranks), [&](int rank, std::string* text) { return exerciseBootstrap(ids, seed, rank, nranks, text); });
    double maxMs = 0;
    for (const Outcome& o : outcomes) {
      ASSERT_EQ(o.result, 0) << describe(outcomes);
      EXPECT_EQ(o.warns, expectedWarns) << describe(outcomes);
      maxMs = std::max(maxMs, std::atof(o.text.c_str()));
    }
    std::printf("  %d ranks, %zu id(s): slowest create %.2f ms\n", nranks, ids.size(), maxMs);
    lastMaxCreateMs_ = maxMs;
  }

  testing::ScopedEnv env_;
  uint32_t seed_ = 0;
  double lastMaxCreateMs_ = 0;
};

// Waits until nothing listens at the id's root any more (its thread finished and closed the port).
bool waitUntilRootGone(const ncclUniqueId& id, double limitSeconds) {
  UniqueIdContents contents;
  if (uniqueIdDecode(id, 0, 1, &contents) != ncclSuccess) return false;
  auto start = Clock::now();
  while (secondsSince(start) < limitSeconds) {
    int fd = ::socket(contents.root.sa.sa_family, SOCK_STREAM, 0);
    int rc = ::connect(fd, &contents.root.sa, socketAddressLength(contents.root));
    int err = errno;
    ::close(fd);
    if (rc != 0 && err == ECONNREFUSED) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

TEST_F(BootstrapTest, UniqueIdLayout) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  uint64_t magic;
  std::memcpy(&magic, id.internal, 8);
  EXPECT_NE(magic, 0u);
  EXPECT_NE(magic, kCommIdMagic);
  SocketAddress addr;
  std::memcpy(&addr, id.internal + 8, sizeof(addr));
  EXPECT_EQ(addr.sa.sa_family, AF_INET);
  EXPECT_EQ(socketAddressToString(addr).rfind("127.0.0.1:", 0), 0u) << socketAddressToString(addr);
  for (size_t i = 36; i < sizeof(id.internal); ++i) EXPECT_EQ(id.internal[i], 0) << i;
  // Leave no root behind: a one-rank job completes it.
  auto outcomes = runChildren({0}, [&](int, std::string* text) { return exerciseBootstrap({id}, 1, 0, 1, text); });
  EXPECT_EQ(outcomes[0].result, 0) << describe(outcomes);
}

TEST_F(BootstrapTest, OneRank) {
  runAll(makeIds(1), 1);
  EXPECT_LT(lastMaxCreateMs_, 100);
}

TEST_F(BootstrapTest, TwoRanks) { runAll(makeIds(1), 2); }

TEST_F(BootstrapTest, FourRanksAreFast) {
  runAll(makeIds(1), 4);
  EXPECT_LT(lastMaxCreateMs_, 250);  // a few ms when the machine is idle
}

TEST_F(BootstrapTest, EightRanks) { runAll(makeIds(1), 8); }

TEST_F(BootstrapTest, ThirtyTwoRanks) { runAll(makeIds(1), 32); }

TEST_F(BootstrapTest, TwoRootsEightRanks) { runAll(makeIds(2), 8); }

TEST_F(BootstrapTest, ThreeRootsEightRanks) { runAll(makeIds(3), 8); }

TEST_F(BootstrapTest, AsManyRootsAsRanks) { runAll(makeIds(4), 4); }

TEST_F(BootstrapTest, CommIdMode) {
  SocketAddress port{};
  {
    SocketAddress lo{};
    lo.sin.sin_family = AF_INET;
    lo.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Socket probe;
    ASSERT_EQ(Socket::listen(lo, 1, SocketType::kBootstrap, &probe), ncclSuccess);
    port = probe.localAddress();
  }
  std::string where = socketAddressToString(port);
  setEnv("NCCL_COMM_ID", where.c_str());
  setEnv("NCCL_SOCKET_RETRY_SLEEP_MSEC", "10");
  // With a secret, a public magic is no warning matter.
  setEnv("BRAID_COMM_SECRET", "comm-id-mode-test-secret");
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  const unsigned char expected[] = {0x80, 0x02, 0x80, 0x02, 0x80, 0x02, 0x80, 0x02, 0x02, 0x00};
  EXPECT_EQ(std::memcmp(id.internal, expected, sizeof(expected)), 0);
  SocketAddress encoded;
  std::memcpy(&encoded, id.internal + 8, sizeof(encoded));
  EXPECT_EQ(socketAddressToString(encoded), where);
  runAll({id}, 4);
  // The same address serves a second job: rank 0's root closed, the port can be bound again.
  runAll({id}, 2);
}

// ncclCommSplit's ids: a root of this process even under NCCL_COMM_ID, whose address the parent
// communicator may still be using.
TEST_F(BootstrapTest, RootIdIgnoresCommId) {
  setEnv("NCCL_COMM_ID", "127.0.0.1:1");
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetRootUniqueId(&id), ncclSuccess);
  uint64_t magic;
  std::memcpy(&magic, id.internal, 8);
  EXPECT_NE(magic, kCommIdMagic);
  SocketAddress addr;
  std::memcpy(&addr, id.internal + 8, sizeof(addr));
  EXPECT_NE(socketAddressToString(addr), "127.0.0.1:1");
  runAll({id}, 3);
}

TEST_F(BootstrapTest, CommIdModeIpv6) {
  SocketAddress v6{};
  v6.sin6.sin6_family = AF_INET6;
  v6.sin6.sin6_addr = in6addr_loopback;
  Socket probe;
  if (Socket::listen(v6, 1, SocketType::kBootstrap, &probe) != ncclSuccess) GTEST_SKIP() << "no IPv6 loopback";
  std::string where = "[::1]:" + std::to_string(socketAddressPort(probe.localAddress()));
  probe.close();
  setEnv("NCCL_COMM_ID", where.c_str());
  setEnv("NCCL_SOCKET_RETRY_SLEEP_MSEC", "10");
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  // No secret: every rank WARNs once that anyone who reaches the address can join (unless the suite
  // runs over TLS, whose pre-shared key keeps strangers out: with_tls_key.sh).
  runAll({id}, 3, /*expectedWarns=*/getenv("BRAID_ENCRYPTION_PSK_FILE") != nullptr ? 0 : 1);
}

TEST_F(BootstrapTest, RanksAsThreadsOfOneProcess) {
  // ncclCommInitAll and group init run several ranks' creates at once in one process.
  const int kRanks = 8;
  std::vector<ncclUniqueId> ids = makeIds(2);
  std::vector<int> results(kRanks, -1);
  std::vector<std::string> texts(kRanks);
  std::vector<std::thread> threads;
  threads.reserve(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] { results[rank] = exerciseBootstrap(ids, seed_, rank, kRanks, &texts[rank]); });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(results[rank], 0) << "rank " << rank << ": " << texts[rank];
}

TEST_F(BootstrapTest, DefaultInterface) {
  // Whatever this host offers first (eth0 on a VM, lo in a bare container) must work.
  unsetenv("NCCL_SOCKET_IFNAME");
  paramsReset();
  runAll(makeIds(1), 3);
}

int countEntries(const char* dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST_F(BootstrapTest, NoDescriptorOrThreadLeaks) {
  // Children: every fd a Bootstrap opened is closed when it is destroyed, on success and failure.
  auto checkChild = [&](const std::vector<ncclUniqueId>& ids, int nranks) {
    return runChildren(iota(nranks), [&](int rank, std::string* text) {
      (void)logEnabled(LogLevel::kInfo, kLogBootstrap);  // the logger opens its file once, on first use
      int before = countEntries("/proc/self/fd");
      int rc = 0;
      {
        std::unique_ptr<Bootstrap> bs;
        rc = static_cast<int>(Bootstrap::create(ids.data(), static_cast<int>(ids.size()), rank, nranks, nullptr, &bs));
        if (rc == 0) rc = static_cast<int>(bs->barrier());
        if (rc == 0) rc = static_cast<int>(bs->broadcast(&rc, sizeof(rc), 0));
      }
      int after = countEntries("/proc/self/fd");
      if (before != after) {
        *text = "rank " + std::to_string(rank) + ": " + std::to_string(before) + " fds before, " +
                std::to_string(after) + " after";
        return kCheckFailed;
      }
      return rc;
    });
  };
  // Parent: the root thread and its sockets are gone once its job is done.
  (void)logEnabled(LogLevel::kInfo, kLogBootstrap);
  int fdsBefore = countEntries("/proc/self/fd");
  int threadsBefore = countEntries("/proc/self/task");
  std::vector<ncclUniqueId> ids = makeIds(2);
  for (const Outcome& o : checkChild(ids, 4)) EXPECT_EQ(o.result, 0) << o.text;
  ncclUniqueId garbageMagic = makeIds(1)[0];
  garbageMagic.internal[3] ^= 1;
  for (const Outcome& o : checkChild({garbageMagic}, 1)) EXPECT_EQ(o.result, ncclRemoteError) << o.text;
  ncclUniqueId zero{};
  for (const Outcome& o : checkChild({zero}, 1)) EXPECT_EQ(o.result, ncclInvalidUsage) << o.text;
  ASSERT_TRUE(waitUntilRootGone(ids[0], 5));
  ASSERT_TRUE(waitUntilRootGone(ids[1], 5));
  // The root of garbageMagic's id never saw a valid rank: end it with the real id's one-rank job.
  garbageMagic.internal[3] ^= 1;
  for (const Outcome& o : checkChild({garbageMagic}, 1)) EXPECT_EQ(o.result, 0) << o.text;
  ASSERT_TRUE(waitUntilRootGone(garbageMagic, 5));
  std::this_thread::sleep_for(milliseconds(50));  // let the last root thread finish exiting
  EXPECT_EQ(countEntries("/proc/self/fd"), fdsBefore);
  EXPECT_EQ(countEntries("/proc/self/task"), threadsBefore);
}

TEST_F(BootstrapTest, LargeMessagesDoNotDeadlock) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  const size_t kBig = 16 << 20;
  auto outcomes = runChildren(iota(2), [&](int rank, std::string* text) {
    std::unique_ptr<Bootstrap> bs;
    BOOTCHECK(Bootstrap::create(ids.data(), 1, rank, 2, nullptr, &bs));
    // Both ranks send first: only a send that keeps receiving meanwhile completes.
    std::vector<char> out(kBig, static_cast<char>(rank + 1)), in(kBig, 0);
    BOOTCHECK(bs->send(1 - rank, 5, out.data(), out.size()));
    BOOTCHECK(bs->recv(1 - rank, 5, in.data(), in.size()));
    DATACHECK(in == std::vector<char>(kBig, static_cast<char>(2 - rank)), "big message contents");
    const std::ptrdiff_t kSlot = 4 << 20;
    std::vector<char> slots(2 * kSlot, 0);
    std::fill(slots.begin() + rank * kSlot, slots.begin() + (rank + 1) * kSlot, static_cast<char>(rank + 7));
    BOOTCHECK(bs->allGather(slots.data(), kSlot));
    DATACHECK(slots[0] == 7 && slots.back() == 8, "big allGather");
    return 0;
  });
  for (const Outcome& o : outcomes) EXPECT_EQ(o.result, 0) << describe(outcomes);
}

// Checks that the children at `which` (all if empty) failed with `result` within `maxSeconds`,
// each logging exactly one WARN, which contains `needle`. Prints one of the messages.
void expectFailed(const std::vector<Outcome>& outcomes, int result, const std::string& needle, double maxSeconds,
                  std::vector<size_t> which = {}) {
  if (which.empty()) {
    for (size_t i = 0; i < outcomes.size(); ++i) which.push_back(i);
  }
  for (size_t i : which) {
    const Outcome& o = outcomes[i];
    EXPECT_EQ(o.result, result) << "child " << i << describe(outcomes);
    EXPECT_LT(o.seconds, maxSeconds) << "child " << i << describe(outcomes);
    EXPECT_EQ(o.warns, 1) << "child " << i << describe(outcomes);
    EXPECT_NE(o.text.find(needle), std::string::npos) << "child " << i << describe(outcomes);
  }
  std::vector<std::string> shown;
  for (size_t i : which) {
    if (std::find(shown.begin(), shown.end(), outcomes[i].text) != shown.end()) continue;
    shown.push_back(outcomes[i].text);
    std::printf("  child %zu: %s\n", i, outcomes[i].text.c_str());
  }
}

// (a) Ranks that never come: the root names them, and the waiting ranks hear it from the root.
TEST_F(BootstrapTest, MissingRanksAreNamed) {
  setEnv("NCCL_BOOTSTRAP_TIMEOUT", "2");
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren({0, 1, 2, 4, 6, 7},
                              [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 8, text); });
  expectFailed(outcomes, ncclRemoteError, "ranks 3,5 of 8 never checked in after 2 s", 3.5);
  for (const Outcome& o : outcomes) EXPECT_GT(o.seconds, 1.5);
  // The root's own WARN, in this process.
  EXPECT_NE(std::string(logLastError()).find("ranks 3,5 of 8 never checked in"), std::string::npos) << logLastError();
}

TEST_F(BootstrapTest, MissingRankWithTwoRoots) {
  setEnv("NCCL_BOOTSTRAP_TIMEOUT", "2");
  std::vector<ncclUniqueId> ids = makeIds(2);
  auto outcomes = runChildren({0, 1, 2, 3, 4, 5, 7},
                              [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 8, text); });
  // Root 1 serves ranks 4-7 and knows that rank 6 is missing; root 0's ranks complete their
  // rendezvous and then fail in the ring, whose other half never forms.
  expectFailed(outcomes, ncclRemoteError, "rank 6 of 8 never checked in", 3.5, {4, 5, 6});
  // Rank 3 may instead see rank 4 exit while its connection waits for rank 4's handshake.
  expectFailed(outcomes, ncclRemoteError, " of 8", 3.5, {0, 1, 2, 3});
}

// (b) The root's process dies: before the ranks come (refused) or while they wait (closed).
pid_t startRootProcess(ncclUniqueId* id) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    ncclUniqueId made{};
    if (bootstrapGetUniqueId(&made) != ncclSuccess) _exit(1);
    if (::write(fds[1], &made, sizeof(made)) != static_cast<ssize_t>(sizeof(made))) _exit(1);
    for (;;) pause();
  }
  ::close(fds[1]);
  ssize_t n = ::read(fds[0], id, sizeof(*id));
  ::close(fds[0]);
  return n == static_cast<ssize_t>(sizeof(*id)) ? pid : -1;
}

TEST_F(BootstrapTest, RootKilledBeforeRanksCome) {
  ncclUniqueId id;
  pid_t root = startRootProcess(&id);
  ASSERT_GT(root, 0);
  kill(root, SIGKILL);
  waitpid(root, nullptr, 0);
  auto outcomes =
      runChildren(iota(2), [&](int rank, std::string* text) { return exerciseBootstrap({id}, 0, rank, 2, text); });
  expectFailed(outcomes, ncclRemoteError, "bootstrap root 0 of 1", 1.0);
  expectFailed(outcomes, ncclRemoteError, "refused", 1.0);
}

TEST_F(BootstrapTest, RootKilledWhileRanksWait) {
  ncclUniqueId id;
  pid_t root = startRootProcess(&id);
  ASSERT_GT(root, 0);
  auto outcomes = runChildren(
      {0, 1, 2}, [&](int rank, std::string* text) { return exerciseBootstrap({id}, 0, rank, 4, text); }, 40,
      [&] {
        std::this_thread::sleep_for(milliseconds(300));
        kill(root, SIGKILL);
        waitpid(root, nullptr, 0);
      });
  // Well before the 20 s timeout.
  expectFailed(outcomes, ncclRemoteError, "closed the connection without answering", 2.0);
}

// (c) Garbage and stale ids.
TEST_F(BootstrapTest, GarbageIdFailsAtOnce) {
  ncclUniqueId garbage;
  std::mt19937 random(seed_);
  for (char& c : garbage.internal) c = static_cast<char>(random() | 1);
  ncclUniqueId zero{};
  for (const ncclUniqueId& id : {garbage, zero}) {
    auto outcomes =
        runChildren(iota(2), [&](int rank, std::string* text) { return exerciseBootstrap({id}, 0, rank, 2, text); });
    expectFailed(outcomes, ncclInvalidUsage, "garbage or uninitialized", 0.5);
  }
}

TEST_F(BootstrapTest, WrongMagicAndSilentPeersDoNotConfuseTheRoot) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  ncclUniqueId impostor = ids[0];
  impostor.internal[0] ^= 0x5a;
  // A connection that never says anything, held open during the whole job.
  UniqueIdContents contents;
  ASSERT_EQ(uniqueIdDecode(ids[0], 0, 1, &contents), ncclSuccess);
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(silent, &contents.root.sa, socketAddressLength(contents.root)), 0);
  // Roles 0-3 are the real ranks; 100+ are processes with a corrupted id claiming ranks 0 and 1.
  auto outcomes = runChildren({100, 0, 1, 101, 2, 3}, [&](int role, std::string* text) {
    if (role >= 100) return exerciseBootstrap({impostor}, 0, role - 100, 4, text);
    // The real ranks come a little later, so that the root meets the impostors while it serves.
    std::this_thread::sleep_for(milliseconds(200));
    return exerciseBootstrap(ids, seed_, role, 4, text);
  });
  ::close(silent);
  expectFailed(outcomes, ncclRemoteError, "unique id is stale", 1.0, {0, 3});
  for (size_t i : {1, 2, 4, 5}) {
    EXPECT_EQ(outcomes[i].result, 0) << describe(outcomes);
    EXPECT_EQ(outcomes[i].warns, 0) << describe(outcomes);
  }
}

TEST_F(BootstrapTest, StaleIdIsRefused) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  runAll(ids, 2);
  ASSERT_TRUE(waitUntilRootGone(ids[0], 5));
  auto outcomes =
      runChildren(iota(2), [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 2, text); });
  expectFailed(outcomes, ncclRemoteError, "nothing listens there", 1.0);
}

// (d) nranks differs between ranks.
TEST_F(BootstrapTest, MismatchedNranks) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren(
      iota(4), [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, rank == 2 ? 5 : 4, text); });
  expectFailed(outcomes, ncclInvalidUsage, "nranks=5", 1.0);
  expectFailed(outcomes, ncclInvalidUsage, "nranks=4", 1.0);
  expectFailed(outcomes, ncclInvalidUsage, "rank 2", 1.0);
}

// (e) Two processes claim one rank.
TEST_F(BootstrapTest, DuplicateRank) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes =
      runChildren({0, 1, 1, 3}, [&](int rank, std::string* text) { return exerciseBootstrap(ids, 0, rank, 4, text); });
  expectFailed(outcomes, ncclInvalidUsage, "rank 1 was claimed twice", 1.0);
}

TEST_F(BootstrapTest, InvalidArguments) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  std::unique_ptr<Bootstrap> bs;
  EXPECT_EQ(Bootstrap::create(ids.data(), 1, 2, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(ids.data(), 1, -1, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(ids.data(), 0, 0, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(ids.data(), 3, 0, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(nullptr, 1, 0, 2, nullptr, &bs), ncclInvalidArgument);
  EXPECT_EQ(bootstrapGetUniqueId(nullptr), ncclInvalidArgument);
  // Complete the id's job so that its root does not linger.
  runAll(ids, 1);
}

TEST_F(BootstrapTest, RecvSizeMismatchNamesBothSizes) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren(iota(2), [&](int rank, std::string* text) {
    std::unique_ptr<Bootstrap> bs;
    BOOTCHECK(Bootstrap::create(ids.data(), 1, rank, 2, nullptr, &bs));
    char data[16] = {};
    if (rank == 0) {
      BOOTCHECK(bs->send(1, 7, data, sizeof(data)));
      return static_cast<int>(bs->recv(1, 8, data, 1));  // wait for rank 1 to be done
    }
    ncclResult_t rc = bs->recv(0, 7, data, 8);
    *text = logLastError();
    char ack = 1;
    BOOTCHECK(bs->send(0, 8, &ack, 1));
    return static_cast<int>(rc);
  });
  EXPECT_EQ(outcomes[0].result, 0) << describe(outcomes);
  expectFailed(outcomes, ncclInvalidUsage, "rank 0 sent 16 bytes but this rank expects 8 (message truncated)", 1.0,
               {1});
}

TEST_F(BootstrapTest, DeadPeerIsNoticedQuickly) {
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren(iota(3), [&](int rank, std::string* text) {
    std::unique_ptr<Bootstrap> bs;
    BOOTCHECK(Bootstrap::create(ids.data(), 1, rank, 3, nullptr, &bs));
    if (rank == 2) return 0;  // leaves: its connections close
    if (rank == 1) return 0;
    int64_t value;
    return static_cast<int>(bs->recv(2, 5, &value, sizeof(value)));
  });
  expectFailed(outcomes, ncclRemoteError, "rank 2 closed its bootstrap connection", 2.0, {0});
}

TEST_F(BootstrapTest, AbortFlagStopsCreate) {
  setEnv("NCCL_BOOTSTRAP_TIMEOUT", "2");
  std::vector<ncclUniqueId> ids = makeIds(1);
  auto outcomes = runChildren({0}, [&](int rank, std::string*) {
    std::atomic<int> abortFlag{0};
    std::thread aborter([&] {
      std::this_thread::sleep_for(milliseconds(200));
      abortFlag.store(1);
    });
    std::unique_ptr<Bootstrap> bs;
    ncclResult_t rc = Bootstrap::create(ids.data(), 1, rank, 2, &abortFlag, &bs);
    aborter.join();
    return static_cast<int>(rc);
  });
  EXPECT_EQ(outcomes[0].result, ncclInternalError) << describe(outcomes);
  EXPECT_EQ(outcomes[0].warns, 0) << describe(outcomes);  // an abort is not a failure
  EXPECT_LT(outcomes[0].seconds, 0.6);
  EXPECT_GT(outcomes[0].seconds, 0.15);
  EXPECT_TRUE(waitUntilRootGone(ids[0], 4));
}

}  // namespace
}  // namespace braid
