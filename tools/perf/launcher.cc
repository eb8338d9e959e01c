#include "launcher.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "report.h"

namespace braidperf {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
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
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The ids of one process, shared by its threads. `fetch` yields the next id of the sequence
// (process 0: makes it and sends it to the other processes; others: read it from their pipe).
class IdShare {
 public:
  explicit IdShare(IdMaker fetch) : fetch_(std::move(fetch)) {}

  bool get(int cycle, ncclUniqueId* id) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (static_cast<int>(ids_.size()) <= cycle) {
      if (failed_) return false;
      if (fetching_) {
        changed_.wait(lock);
        continue;
      }
      fetching_ = true;  // fetch without the lock: reading the pipe may block
      lock.unlock();
      ncclUniqueId fresh;
      bool ok = fetch_(&fresh);
      lock.lock();
      fetching_ = false;
      if (ok) ids_.push_back(fresh);
      failed_ = failed_ || !ok;
      changed_.notify_all();
    }
    *id = ids_[cycle];
    return true;
  }

 private:
  IdMaker fetch_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ncclUniqueId> ids_;
  bool fetching_ = false;
  bool failed_ = false;
};

// Gathers the records of one process's workers and delivers complete steps in order.
class Collector {
 public:
  Collector(int workers, OnStep deliver) : workers_(workers), next_(workers, 0), deliver_(std::move(deliver)) {}

  void post(int localWorker, const std::vector<double>& record) {
    std::lock_guard<std::mutex> lock(mutex_);
    Pending& p = pending_[next_[localWorker]++];
    if (p.records.empty()) p.records.resize(workers_);
    p.records[localWorker] = record;
    p.count++;
    for (auto it = pending_.find(delivered_); it != pending_.end() && it->second.count == workers_;
         it = pending_.find(delivered_)) {
      deliver_(delivered_, it->second.records);
      pending_.erase(it);
      delivered_++;
    }
    lastPost_ = Clock::now();
  }
  double idleSeconds() {
    std::lock_guard<std::mutex> lock(mutex_);
    return secondsSince(lastPost_);
  }
  int delivered() {
    std::lock_guard<std::mutex> lock(mutex_);
    return delivered_;
  }

 private:
  struct Pending {
    std::vector<std::vector<double>> records;
    int count = 0;
  };
  const int workers_;
  std::vector<int> next_;
  OnStep deliver_;
  std::mutex mutex_;
  std::map<int, Pending> pending_;
  int delivered_ = 0;
  Clock::time_point lastPost_ = Clock::now();
};

// Runs this process's `threads` workers. On failure the others get graceSec, then the process
// exits (their threads may be blocked in the library for ever). timeoutSec as in LaunchConfig.
bool runThreadsHere(const LaunchConfig& cfg, int proc, const WorkerBody& body, IdShare* ids, Collector* out) {
  const Layout& l = cfg.layout;
  std::mutex mutex;
  std::condition_variable doneCv;
  int done = 0;
  bool failed = false;
  std::vector<char> results(l.threads, 0);
  IdSource idSource = [ids](int cycle, ncclUniqueId* id) { return ids->get(cycle, id); };
  std::vector<std::thread> threads;
  for (int t = 0; t < l.threads; t++) {
    threads.emplace_back([&, t] {
      const int firstRank = (proc * l.threads + t) * l.gpus;
      WorkerInfo info{proc * l.threads + t, firstRank, l.deviceOf(firstRank), l.gpus, l.nranks()};
      Emit emit = [out, t](const std::vector<double>& r) {
        out->post(t, r);
        return true;
      };
      bool ok = body(info, idSource, emit);
      std::lock_guard<std::mutex> lock(mutex);
      results[t] = ok;
      failed = failed || !ok;
      done++;
      doneCv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  Clock::time_point failedAt{};
  while (done < l.threads) {
    doneCv.wait_for(lock, std::chrono::milliseconds(200));
    if (failed && failedAt == Clock::time_point{}) failedAt = Clock::now();
    bool graceOver = failed && secondsSince(failedAt) > cfg.graceSec;
    bool stalled = cfg.timeoutSec > 0 && out->idleSeconds() > cfg.timeoutSec;
    if (done < l.threads && (graceOver || stalled)) {
      printError("%s; %d of %d threads of process %d still running at step %d, exiting",
                 graceOver ? "a rank failed" : "no progress within --timeout", l.threads - done, l.threads, proc,
                 out->delivered());
      std::fflush(stdout);
      _exit(1);
    }
  }
  lock.unlock();
  for (std::thread& t : threads) t.join();
  return !failed;
}

// Parent side of one child process: its result pipe and the complete steps read from it.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;
  std::deque<std::vector<std::vector<double>>> steps;  // each: one record per thread of the child
  bool open = true;
};

// Decodes complete steps (threads records, each [uint64 n][n doubles]) from the child's buffer.
void decodeSteps(Child* c, int threads) {
  while (true) {
    size_t pos = 0;
    std::vector<std::vector<double>> step;
    for (int t = 0; t < threads; t++) {
      uint64_t n = 0;
      if (c->buffer.size() < pos + sizeof(n)) return;
      std::memcpy(&n, c->buffer.data() + pos, sizeof(n));
      pos += sizeof(n);
      if (c->buffer.size() < pos + n * sizeof(double)) return;
      std::vector<double> rec(n);
      if (n > 0) std::memcpy(rec.data(), c->buffer.data() + pos, n * sizeof(double));
      pos += n * sizeof(double);
      step.push_back(std::move(rec));
    }
    c->steps.push_back(std::move(step));
    c->buffer.erase(0, pos);
  }
}

[[noreturn]] void childMain(const LaunchConfig& cfg, int p, const std::vector<int>& idPipes, int resultFd,
                            const WorkerBody& body, const IdMaker& makeId) {
  const int procs = cfg.layout.procs;
  if (cfg.layout.hosts > 0) {
    // Before the library reads it: at the first communicator of this process.
    const int host = p / (procs / cfg.layout.hosts);
    setenv("NCCL_HOSTID", ("braid-perf-host-" + std::to_string(host)).c_str(), 1);
  }
  IdShare ids([&](ncclUniqueId* id) {
    if (p != 0) return readAll(idPipes[2 * p], id, sizeof(*id));
    if (!makeId(id)) return false;
    for (int q = 1; q < procs; q++) {
      if (!writeAll(idPipes[2 * q + 1], id, sizeof(*id))) return false;
    }
    return true;
  });
  Collector collector(cfg.layout.threads, [resultFd](int, const std::vector<std::vector<double>>& recs) {
    for (const std::vector<double>& r : recs) {
      uint64_t n = r.size();
      if (!writeAll(resultFd, &n, sizeof(n)) || !writeAll(resultFd, r.data(), n * sizeof(double))) _exit(3);
    }
  });
  LaunchConfig local = cfg;
  local.timeoutSec = 0;  // the parent watches progress
  bool ok = runThreadsHere(local, p, body, &ids, &collector);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(ok ? 0 : 1);
}

// Reads whatever is ready; delivers steps every child has; reaps children that closed their pipe.
bool pumpChildren(std::vector<Child>* children, int threads, int gpus, const OnStep& onStep, int* step,
                  bool* progressed) {
  std::vector<pollfd> fds;
  for (Child& c : *children) fds.push_back(pollfd{c.open ? c.fd : -1, POLLIN, 0});
  if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) return false;
  bool ok = true;
  for (size_t i = 0; i < children->size(); i++) {
    Child& c = (*children)[i];
    if (!c.open || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char chunk[65536];
    ssize_t r = read(c.fd, chunk, sizeof(chunk));
    if (r > 0) {
      c.buffer.append(chunk, static_cast<size_t>(r));
      decodeSteps(&c, threads);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    c.open = false;
    close(c.fd);
    int status = 0;
    waitpid(c.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      int first = static_cast<int>(i) * threads * gpus;
      printError("process %zu (ranks %d-%d) %s %d", i, first, first + threads * gpus - 1,
                 WIFSIGNALED(status) ? "was killed by signal" : "failed with exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      ok = false;
    }
  }
  while (true) {
    std::vector<std::vector<double>> all;
    for (Child& c : *children) {
      if (c.steps.empty()) return ok;
    }
    for (Child& c : *children) {
      for (std::vector<double>& r : c.steps.front()) all.push_back(std::move(r));
      c.steps.pop_front();
    }
    onStep((*step)++, all);
    *progressed = true;
  }
}

bool runProcesses(const LaunchConfig& cfg, const WorkerBody& body, const OnStep& onStep, const IdMaker& makeId) {
  const int procs = cfg.layout.procs;
  std::vector<int> idPipes(2 * procs, -1), resultPipes(2 * procs, -1);
  for (int p = 0; p < procs; p++) {
    if (pipe(&idPipes[2 * p]) != 0 || pipe(&resultPipes[2 * p]) != 0) {
      std::perror("braid-perf: pipe");
      return false;
    }
  }
  std::fflush(nullptr);  // or the children print the parent's buffered output again
  std::vector<Child> children(procs);
  for (int p = 0; p < procs; p++) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("braid-perf: fork");
      for (int q = 0; q < p; q++) kill(children[q].pid, SIGKILL);
      return false;
    }
    if (pid == 0) {
      // Keep only this child's ends, so that the parent sees EOF when any one child dies.
      for (int q = 0; q < procs; q++) {
        if (q != p) close(resultPipes[2 * q + 1]);
        close(resultPipes[2 * q]);
        if (q != p) close(idPipes[2 * q]);
        if (p != 0) close(idPipes[2 * q + 1]);
      }
      childMain(cfg, p, idPipes, resultPipes[2 * p + 1], body, makeId);
    }
    children[p].pid = pid;
    children[p].fd = resultPipes[2 * p];
  }
  for (int p = 0; p < procs; p++) {
    close(idPipes[2 * p]);
    close(idPipes[2 * p + 1]);
    close(resultPipes[2 * p + 1]);
  }
  bool ok = true;
  int step = 0;
  Clock::time_point lastProgress = Clock::now(), failedAt{};
  bool killed = false;
  auto anyOpen = [&] {
    for (const Child& c : children) {
      if (c.open) return true;
    }
    return false;
  };
  while (anyOpen()) {
    bool progressed = false;
    if (!pumpChildren(&children, cfg.layout.threads, cfg.layout.gpus, onStep, &step, &progressed) && ok) {
      ok = false;
      failedAt = Clock::now();
    }
    if (progressed) lastProgress = Clock::now();
    bool graceOver = !ok && secondsSince(failedAt) > cfg.graceSec;
    bool stalled = cfg.timeoutSec > 0 && secondsSince(lastProgress) > cfg.timeoutSec;
    if (!killed && anyOpen() && (graceOver || stalled)) {
      std::fprintf(stderr, "braid-perf: %s at step %d; killing the processes still running:",
                   graceOver ? "a rank failed" : "no progress within --timeout", step);
      for (size_t i = 0; i < children.size(); i++) {
        if (children[i].open) std::fprintf(stderr, " %zu%s", i, children[i].steps.empty() ? " (not reported)" : "");
      }
      std::fprintf(stderr, "\n");
      for (Child& c : children) {
        if (c.open) kill(c.pid, SIGKILL);
      }
      killed = true;
      ok = false;
    }
  }
  return ok;
}

}  // namespace

bool runWorkers(const LaunchConfig& config, const WorkerBody& body, const OnStep& onStep, const IdMaker& makeId) {
  if (config.layout.procs > 1) return runProcesses(config, body, onStep, makeId);
  IdShare ids(makeId);
  Collector collector(config.layout.threads, onStep);
  return runThreadsHere(config, 0, body, &ids, &collector);
}

}  // namespace braidperf
