#include "watch/peer_watch.h"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "util/params.h"
#include "util/thread_guard.h"
#include "watch/comm_watch.h"

namespace braid::watch {
namespace {

struct Watches {
  std::mutex mutex;
  std::unordered_set<const CommWatch*> added;
  // The watch forEachWatched's fn is working on (null: none), and the signal that it has moved on,
  // for removeWatched to wait on.
  const CommWatch* visiting = nullptr;
  std::condition_variable visitDone;
};

// Never destroyed: communicators destroyed from static destructors at exit still find it.
Watches& watches() {
  static Watches* w = new Watches;
  return *w;
}

void watchLoop(int64_t intervalMs) {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(intervalMs));
    // A visit that throws (out of memory) is WARNed and skipped: the watch itself goes on.
    (void)guardThread("peer watch", [] { forEachWatched([](CommWatch* watch) { watch->visit(); }); });
  }
}

}  // namespace

bool processGone(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  // Exited but not reaped: /proc/<pid>/stat's state (after the parenthesized name) is Z or X.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

int firstDeadPeer(const std::vector<PeerProcess>& peers, int self) {
  if (self < 0 || self >= static_cast<int>(peers.size()) || peers[self].pidSpace == 0) return -1;
  for (int r = 0; r < static_cast<int>(peers.size()); r++) {
    const PeerProcess& p = peers[r];
    if (r == self || p.pidSpace != peers[self].pidSpace || p.pid == peers[self].pid) continue;
    if (processGone(p.pid)) return r;
  }
  return -1;
}

void addWatched(CommWatch* watch) {
  std::lock_guard<std::mutex> lock(watches().mutex);
  watches().added.insert(watch);
}

void removeWatched(const CommWatch* watch) {
  Watches& w = watches();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.added.erase(watch);
  w.visitDone.wait(lock, [&] { return w.visiting != watch; });
}

void waitOutVisit(const CommWatch* watch) {
  Watches& w = watches();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.visitDone.wait(lock, [&] { return w.visiting != watch; });
}

void startWatchThread() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int64_t intervalMs = paramInt(ParamId::kPeerWatchMs);
    if (intervalMs <= 0) return;
    // Detached: it holds no lock between visits, and the set outlives it.
    std::thread(watchLoop, intervalMs).detach();
  });
}

// The lock is held only to pick the next watch: a hang report gathers for up to seconds, and a
// communicator that is being destroyed meanwhile waits only for its own visit.
void forEachWatched(const std::function<void(CommWatch*)>& fn) {
  Watches& w = watches();
  std::vector<const CommWatch*> snapshot;
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    snapshot.assign(w.added.begin(), w.added.end());
  }
  for (const CommWatch* watch : snapshot) {
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      if (w.added.count(watch) == 0) continue;  // removed meanwhile: perhaps freed
      w.visiting = watch;
    }
    // The set keeps const pointers to say it never changes a watch; the visit does.
    fn(const_cast<CommWatch*>(watch));
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      w.visiting = nullptr;
    }
    w.visitDone.notify_all();
  }
}

}  // namespace braid::watch
