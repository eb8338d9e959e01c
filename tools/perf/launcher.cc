#include "launcher.h"

#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace braidperf {
namespace {

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Processes: rank 0 makes each cycle's id and writes it into every other rank's pipe; each rank
// writes its samples (count, then values) into its result pipe.
bool runProcesses(int nranks, int idsNeeded, const RankBody& body, std::vector<std::vector<double>>* perRank) {
  std::vector<int> idPipe(2 * nranks), resultPipe(2 * nranks);
  for (int r = 0; r < nranks; r++) {
    if (pipe(&idPipe[2 * r]) != 0 || pipe(&resultPipe[2 * r]) != 0) return false;
  }
  std::vector<pid_t> pids(nranks);
  for (int r = 0; r < nranks; r++) {
    pids[r] = fork();
    if (pids[r] < 0) return false;
    if (pids[r] > 0) continue;
    IdSource ids = [&](int, ncclUniqueId* id) {
      if (r != 0) return readAll(idPipe[2 * r], id, sizeof(*id));
      if (ncclGetUniqueId(id) != ncclSuccess) return false;
      for (int p = 1; p < nranks; p++) {
        if (!writeAll(idPipe[2 * p + 1], id, sizeof(*id))) return false;
      }
      return true;
    };
    std::vector<double> samples;
    bool ok = body(r, nranks, ids, &samples);
    uint64_t n = samples.size();
    ok = ok && writeAll(resultPipe[2 * r + 1], &n, sizeof(n)) &&
         writeAll(resultPipe[2 * r + 1], samples.data(), n * sizeof(double));
    std::fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  // The parent only reads results: closing every other end lets a read see EOF, instead of
  // blocking forever, when a rank dies before it reports.
  for (int r = 0; r < nranks; r++) {
    close(idPipe[2 * r]);
    close(idPipe[2 * r + 1]);
    close(resultPipe[2 * r + 1]);
  }
  bool ok = true;
  perRank->assign(nranks, {});
  for (int r = 0; r < nranks; r++) {
    uint64_t n = 0;
    if (readAll(resultPipe[2 * r], &n, sizeof(n))) {
      (*perRank)[r].resize(n);
      ok = readAll(resultPipe[2 * r], (*perRank)[r].data(), n * sizeof(double)) && ok;
    } else {
      ok = false;
    }
  }
  for (int r = 0; r < nranks; r++) {
    close(resultPipe[2 * r]);
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "braid-perf: rank %d failed\n", r);
      ok = false;
    }
  }
  return ok;
}

// Threads: rank 0's thread makes each cycle's id; the others wait for it.
bool runThreads(int nranks, int idsNeeded, const RankBody& body, std::vector<std::vector<double>>* perRank) {
  std::mutex mutex;
  std::condition_variable ready;
  std::vector<ncclUniqueId> made;
  bool failed = false;
  IdSource ids = [&](int cycle, ncclUniqueId* id) {
    std::unique_lock<std::mutex> lock(mutex);
    if (static_cast<int>(made.size()) <= cycle) {
      ready.wait(lock, [&] { return failed || static_cast<int>(made.size()) > cycle; });
    }
    if (failed) return false;
    *id = made[cycle];
    return true;
  };
  IdSource rootIds = [&](int cycle, ncclUniqueId* id) {
    bool ok = ncclGetUniqueId(id) == ncclSuccess;
    std::lock_guard<std::mutex> lock(mutex);
    if (ok) made.push_back(*id);
    failed = failed || !ok;
    ready.notify_all();
    return ok;
  };
  perRank->assign(nranks, {});
  std::vector<char> results(nranks, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; r++) {
    threads.emplace_back([&, r] { results[r] = body(r, nranks, r == 0 ? rootIds : ids, &(*perRank)[r]); });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < nranks; r++) {
    if (!results[r]) return false;
  }
  return true;
}

}  // namespace

bool runRanks(RankMode mode, int nranks, int idsNeeded, const RankBody& body,
              std::vector<std::vector<double>>* perRank) {
  if (mode == RankMode::kProcesses) return runProcesses(nranks, idsNeeded, body, perRank);
  return runThreads(nranks, idsNeeded, body, perRank);
}

}  // namespace braidperf
