// What the bootstrap tests share: ranks as fork()ed children that report through pipes (their
// result, time and last WARN), the WARN count of each child's log, the bootstrap exercise every
// rank runs, and the fixture that sets and restores the bootstrap variables.
#pragma once

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

namespace braid::bootstrap_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline constexpr int kNoReport = -1;       // the child crashed, hung or was killed
inline constexpr int kCheckFailed = 1000;  // a data check failed in the child; its text says which

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

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What a child runs: returns an ncclResult_t (or kCheckFailed) and may describe it in *text; by
// default the text is the child's last WARN.
using RankFn = std::function<int(int role, std::string* text)>;

// Where children log (NCCL_DEBUG_FILE with %p), so that the parent can count their WARN lines.
inline std::string gLogDir;

inline int countWarns(pid_t pid) {
  std::ifstream file(gLogDir + "/braid." + std::to_string(pid) + ".log");
  int count = 0;
  for (std::string line; std::getline(file, line);) count += line.find("NCCL WARN") != std::string::npos ? 1 : 0;
  return count;
}

[[noreturn]] inline void runChild(int role, const RankFn& fn, int fd) {
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
inline void awaitGate(int fd) {
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
inline std::vector<Outcome> runChildren(const std::vector<int>& roles, const RankFn& fn, double limitSeconds = 40,
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

inline std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

inline std::string describe(const std::vector<Outcome>& outcomes) {
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

inline unsigned char pattern(uint32_t seed, int rank, size_t i) {
  uint32_t x = seed ^ (static_cast<uint32_t>(rank) * 2654435761u) ^ static_cast<uint32_t>(i * 40503u);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return static_cast<unsigned char>(x);
}

// Everything a communicator's bootstrap does: create, allGather of random per-rank data, barrier,
// broadcast from the last rank, tagged messages around the ring received in another order than
// sent. On success the text is the create time in ms.
inline int exerciseBootstrap(const std::vector<ncclUniqueId>& ids, uint32_t seed, int rank, int nranks,
                             std::string* text) {
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
inline bool waitUntilRootGone(const ncclUniqueId& id, double limitSeconds) {
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

}  // namespace braid::bootstrap_test
