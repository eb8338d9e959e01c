// The root thread (see root.h; the protocol is described in bootstrap.cc).
#include "bootstrap/root.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "bootstrap/wire.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/rate_limit.h"
#include "util/text.h"
#include "util/thread_guard.h"

namespace braid {

namespace {

// Poll slices: short during a job (stop requests and deadlines are noticed quickly), longer while
// the id waits for its first rank, when nothing but a stop request can happen.
constexpr int kJobSliceMs = kSocketPollSliceMs;
constexpr int kIdleSliceMs = 200;
// Bound on writing one reply: ranks wait for it, so it only blocks if a rank is stuck.
constexpr std::chrono::milliseconds kReplySendTimeout(2000);

// "3", "3,5", "0-3,7": the ranks sorted, each once, runs collapsed.
std::string sortedRankText(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return rankList(ranks, {",", true});
}

std::string formatText(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string formatText(const char* fmt, ...) {
  char buffer[sizeof(RootReply::message)];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return buffer;
}

// Closes root listeners in children forked while roots run. A process that calls ncclGetUniqueId
// and then forks its ranks (launchers, multiprocessing) would otherwise keep a copy of each root's
// listening socket in every child: after the root finishes, connections to its port (a stale id,
// a late or impostor rank) would queue on that copy unanswered until the timeout, instead of
// being refused or dropped at once. The child has no root thread, so the fds are dead weight there.
class ListenerForkGuard {
 public:
  explicit ListenerForkGuard(int fd) : fd_(fd) {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(&lock, &unlock, &closeInChild); });
    std::lock_guard<std::mutex> hold(mutex());
    fds().push_back(fd_);
  }
  // Runs before the listener closes: a fork after this point may copy the fd, but the child can
  // never close a number that the parent has since reused for something else.
  ~ListenerForkGuard() {
    std::lock_guard<std::mutex> hold(mutex());
    auto& list = fds();
    list.erase(std::remove(list.begin(), list.end(), fd_), list.end());
  }
  ListenerForkGuard(const ListenerForkGuard&) = delete;
  ListenerForkGuard& operator=(const ListenerForkGuard&) = delete;

 private:
  // Leaked on purpose: fork handlers may run while static destructors do.
  static std::mutex& mutex() {
    static auto* m = new std::mutex();
    return *m;
  }
  static std::vector<int>& fds() {
    static auto* v = new std::vector<int>();
    return *v;
  }
  static void lock() { mutex().lock(); }
  static void unlock() { mutex().unlock(); }
  static void closeInChild() {
    for (int fd : fds()) ::close(fd);
    fds().clear();
    mutex().unlock();
  }

  int fd_;
};

// One job of one root. Lives on the root thread only.
class RootJob {
 public:
  RootJob(Socket listener, std::chrono::milliseconds idleTimeout, std::shared_ptr<std::atomic<bool>> stop)
      : where_(socketAddressToString(listener.localAddress())),
        acceptor_(std::move(listener), sizeof(RootCheckIn), std::chrono::milliseconds(5000), kBootstrapMaxPending),
        forkGuard_(acceptor_.listener().fd()),
        idleTimeout_(idleTimeout),
        stop_(std::move(stop)) {}

  void run();

 private:
  struct Member {
    Socket socket;
    RootCheckIn info{};
    bool present = false;
  };

  void handleCheckIn(AcceptedConnection conn);
  void refuse(AcceptedConnection* conn, const RootCheckIn& in, const std::string& why);
  void startJob(const RootCheckIn& in);
  // Records the failure (the first one wins), WARNs once and tells every connected rank.
  void fail(ncclResult_t result, const std::string& text);
  // Sends the recorded failure to a rank and closes its connection.
  void reject(Socket* socket);
  void sendReply(Socket* socket, ncclResult_t result, const SocketAddress* next, const std::string& text);
  void replyAll();
  bool complete() const;
  std::vector<int> missingRanks() const;
  std::string describe(const RootCheckIn& in) const;
  const char* plural(size_t n) const { return n == 1 ? "" : "s"; }

  std::string where_;
  SocketAcceptor acceptor_;
  ListenerForkGuard forkGuard_;  // after acceptor_: destroyed (unregistered) before the listener closes
  std::chrono::milliseconds idleTimeout_;
  std::shared_ptr<std::atomic<bool>> stop_;

  // The job, as the first check-in describes it.
  bool started_ = false;
  RootCheckIn first_{};
  Deadline deadline_;
  Deadline::Clock::time_point startTime_;
  RankBlock block_{0, 0};
  bool needStitch_ = false;  // several roots: the first rank of the next block checks in here too
  int stitchRank_ = -1;
  // By rank, only those that checked in: memory follows the connections, not a claimed nranks.
  std::map<int, Member> members_;
  size_t blockSize_ = 0;
  Member stitch_;
  size_t expected_ = SIZE_MAX;  // check-ins this root answers in all

  // The job's failure once there is one (the first wins): every rank gets it, as it checks in.
  struct Failure {
    ncclResult_t result = ncclSuccess;
    std::string text;
  };
  std::optional<Failure> failure_;
  size_t answered_ = 0;
  RateLimit refusals_;
};

void RootJob::run() {
  Deadline idle = idleTimeout_.count() > 0 ? Deadline::after(idleTimeout_) : Deadline::never();
  std::vector<pollfd> fds;
  std::vector<Member*> polled;
  while (!stop_->load(std::memory_order_acquire)) {
    if (!started_ && idle.expired()) {
      INFO(kLogBootstrap, "Bootstrap root %s: no rank checked in within %lld s; closing (the id was not used)",
           where_.c_str(), static_cast<long long>(idleTimeout_.count() / 1000));
      return;
    }
    if (started_ && deadline_.expired()) {
      if (!failure_) {
        std::vector<int> missing = missingRanks();
        fail(ncclRemoteError,
             formatText("rank%s %s of %d never checked in after %.3g s; check that every rank calls "
                        "ncclCommInitRank with the same unique id(s) and that none failed or hangs before it",
                        plural(missing.size()), sortedRankText(missing).c_str(), first_.nranks,
                        deadline_.timeoutSeconds()));
      }
      return;
    }
    fds.clear();
    polled.clear();
    acceptor_.addPollFds(&fds);
    size_t firstMember = fds.size();
    for (auto& entry : members_) {
      if (entry.second.socket.valid()) polled.push_back(&entry.second);
    }
    if (stitch_.socket.valid()) polled.push_back(&stitch_);
    for (Member* m : polled) fds.push_back(pollfd{m->socket.fd(), POLLIN, 0});
    int slice = started_ ? deadline_.sliceMs(kJobSliceMs) : idle.sliceMs(kIdleSliceMs);
    if (::poll(fds.data(), fds.size(), slice) < 0 && errno != EINTR) {
      int err = errno;
      fail(ncclSystemError, formatText("poll() failed: %s (errno %d)", strerror(err), err));
      return;
    }
    if (acceptor_.progress() != ncclSuccess) {
      fail(ncclSystemError, "the root's listening socket failed (see the previous warning on the root's host)");
      return;
    }
    AcceptedConnection conn;
    while (acceptor_.takeReady(&conn)) handleCheckIn(std::move(conn));
    // A rank sends nothing after its check-in: input means it closed (exited) or broke protocol.
    for (size_t i = 0; i < polled.size() && !failure_; ++i) {
      if (fds[firstMember + i].revents == 0 || !polled[i]->socket.valid()) continue;
      const RootCheckIn& in = polled[i]->info;
      polled[i]->socket.close();
      ++answered_;
      std::vector<int> missing = missingRanks();
      fail(ncclRemoteError,
           formatText("%s closed its connection to the root before the rendezvous completed (it "
                      "exited, aborted or failed); rank%s %s of %d had not checked in yet",
                      describe(in).c_str(), plural(missing.size()), sortedRankText(missing).c_str(), first_.nranks));
    }
    if (failure_ ? answered_ >= expected_ : complete()) {
      if (!failure_) replyAll();
      return;
    }
  }
  INFO(kLogBootstrap, "Bootstrap root %s: stopped by its owner", where_.c_str());
}

std::string RootJob::describe(const RootCheckIn& in) const {
  return formatText("rank %d (pid %d on %s)", in.rank, in.pid, peerText(in.host, sizeof(in.host)).c_str());
}

void RootJob::refuse(AcceptedConnection* conn, const RootCheckIn& in, const std::string& why) {
  const std::string from = socketAddressToString(conn->socket.peerAddress());
  if (refusals_.allow(0)) {
    WARN(
        "Bootstrap root %s: refused a check-in from %s (pid %d on %s): %s (%zu refusals not reported before this "
        "one); the job goes on without it",
        where_.c_str(), from.c_str(), in.pid, peerText(in.host, sizeof(in.host)).c_str(), why.c_str(),
        refusals_.suppressedBefore());
  }
  // A process that runs this library learns why; the job's own state is untouched.
  RootReply reply{};
  reply.result = ncclInvalidUsage;
  std::snprintf(reply.message, sizeof(reply.message), "the root refused this check-in: %s", why.c_str());
  (void)conn->socket.sendMsg(&reply, sizeof(reply), Deadline::after(std::chrono::milliseconds(100)));
  conn->socket.close();
}

void RootJob::startJob(const RootCheckIn& in) {
  // The fields were checked (parseRootCheckIn()); the timeout is the sender's choice, so it is capped.
  started_ = true;
  first_ = in;
  startTime_ = Deadline::Clock::now();
  deadline_ = Deadline::after(std::chrono::milliseconds(std::clamp(in.timeoutMs, 1, kBootstrapMaxRootTimeoutMs)));
  block_ = rootBlock(in.nranks, in.nroots, in.root);
  blockSize_ = static_cast<size_t>(block_.end - block_.begin);
  needStitch_ = in.nroots > 1;
  stitchRank_ = block_.end % in.nranks;
  expected_ = blockSize_ + (needStitch_ ? 1 : 0);
}

void RootJob::handleCheckIn(AcceptedConnection conn) {
  RootCheckIn in{};
  std::string bad;
  const bool wellFormed = parseRootCheckIn(reinterpret_cast<const uint8_t*>(conn.hello.data()), conn.hello.size(), &in,
                                           &bad) == ncclSuccess;
  conn.socket.setDescription(formatText("rank %d", in.rank));
  // Another protocol fails the job (a mixed installation); a check-in that cannot be from a rank of
  // any job (fields out of range) is refused alone: it neither starts nor fails the job.
  if (in.protocol != kBootstrapProtocol) {
    if (!failure_) {
      fail(ncclInvalidUsage, formatText("%s speaks bootstrap protocol 0x%x, this root 0x%x: every process must "
                                        "load the same Braid library",
                                        describe(in).c_str(), in.protocol, kBootstrapProtocol));
    }
    reject(&conn.socket);
    return;
  }
  if (!wellFormed) {
    refuse(&conn, in, bad);
    return;
  }
  if (failure_) {
    reject(&conn.socket);
    return;
  }
  if (!started_) startJob(in);
  const RootCheckIn& ref = first_;
  std::string problem;
  Member* slot = nullptr;
  bool stitch = in.kind == static_cast<uint32_t>(CheckInKind::kStitch);
  if (in.nranks != ref.nranks) {
    problem = formatText("%s called ncclCommInitRank with nranks=%d but rank %d (the first to check in) with nranks=%d",
                         describe(in).c_str(), in.nranks, ref.rank, ref.nranks);
  } else if (in.nroots != ref.nroots || in.root != ref.root) {
    problem = formatText(
        "%s passed this unique id as id %d of %d but rank %d as id %d of %d: every rank must pass "
        "the same ids in the same order",
        describe(in).c_str(), in.root, in.nroots, ref.rank, ref.root, ref.nroots);
  } else if (stitch ? (!needStitch_ || in.rank != stitchRank_) : (in.rank < block_.begin || in.rank >= block_.end)) {
    problem = formatText("%s checked in with root %d of %d, which serves ranks %d-%d%s", describe(in).c_str(), ref.root,
                         ref.nroots, block_.begin, block_.end - 1,
                         needStitch_ ? formatText(" and rank %d", stitchRank_).c_str() : "");
  } else {
    slot = stitch ? &stitch_ : &members_[in.rank];
    if (slot->present) {
      const RootCheckIn& prev = slot->info;
      problem = formatText(
          "rank %d was claimed twice: by pid %d on %s and by pid %d on %s; each rank number must "
          "be used by exactly one process",
          in.rank, prev.pid, peerText(prev.host, sizeof(prev.host)).c_str(), in.pid,
          peerText(in.host, sizeof(in.host)).c_str());
    }
  }
  if (!problem.empty()) {
    fail(ncclInvalidUsage, problem);
    reject(&conn.socket);
    return;
  }
  TRACE(kLogBootstrap, "Bootstrap root %s: %s checked in%s", where_.c_str(), describe(in).c_str(),
        stitch ? " (first rank of the next block)" : "");
  slot->socket = std::move(conn.socket);
  slot->info = in;
  slot->present = true;
}

bool RootJob::complete() const {
  if (!started_) return false;
  // Only check-ins that passed every test are in members_, each with its own rank of the block.
  return members_.size() == blockSize_ && (!needStitch_ || stitch_.present);
}

std::vector<int> RootJob::missingRanks() const {
  std::vector<int> missing;
  for (int rank = block_.begin; rank < block_.end; ++rank) {
    if (members_.count(rank) == 0) missing.push_back(rank);
  }
  if (needStitch_ && !stitch_.present) missing.push_back(stitchRank_);
  return missing;
}

void RootJob::sendReply(Socket* socket, ncclResult_t result, const SocketAddress* next, const std::string& text) {
  RootReply reply{};
  reply.result = result;
  if (next != nullptr) reply.next = *next;
  std::snprintf(reply.message, sizeof(reply.message), "%s", text.c_str());
  // A rank that died since its check-in makes this fail with a WARN of its own; the others still
  // get their replies.
  (void)socket->sendMsg(&reply, sizeof(reply), Deadline::after(kReplySendTimeout));
}

void RootJob::fail(ncclResult_t result, const std::string& text) {
  if (failure_) return;
  failure_ = Failure{result, text};
  if (started_) {
    WARN("Bootstrap root %d of %d (%s): %s", first_.root, first_.nroots, where_.c_str(), text.c_str());
  } else {
    WARN("Bootstrap root %s: %s", where_.c_str(), text.c_str());
  }
  for (auto& entry : members_) {
    if (entry.second.socket.valid()) reject(&entry.second.socket);
  }
  if (stitch_.socket.valid()) reject(&stitch_.socket);
}

void RootJob::reject(Socket* socket) {
  sendReply(socket, failure_->result, nullptr, failure_->text);
  socket->close();
  ++answered_;
}

void RootJob::replyAll() {
  // Complete: members_ holds every rank of the block, in rank order.
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    // The next rank is the next member, or after the block's last rank the first rank of the next
    // block (which checked in here as the stitch), or with one root rank 0 again.
    auto after = std::next(it);
    const Member& next = after != members_.end() ? after->second : needStitch_ ? stitch_ : members_.begin()->second;
    sendReply(&it->second.socket, ncclSuccess, &next.info.listen, "");
  }
  if (needStitch_) sendReply(&stitch_.socket, ncclSuccess, nullptr, "");
  double ms = std::chrono::duration<double, std::milli>(Deadline::Clock::now() - startTime_).count();
  INFO(kLogBootstrap, "Bootstrap root %d of %d (%s): ranks %d-%d of %d checked in within %.1f ms", first_.root,
       first_.nroots, where_.c_str(), block_.begin, block_.end - 1, first_.nranks, ms);
}

}  // namespace

ncclResult_t BootstrapRoot::start(Socket listener, std::chrono::milliseconds idleTimeout,
                                  std::unique_ptr<BootstrapRoot>* out) {
  std::unique_ptr<BootstrapRoot> root(new BootstrapRoot());
  root->stop_ = std::make_shared<std::atomic<bool>>(false);
  std::string where = socketAddressToString(listener.localAddress());
  auto job = std::make_unique<RootJob>(std::move(listener), idleTimeout, root->stop_);
  try {
    // An exception (out of memory) ends the job: its destructor closes every connection, which
    // the ranks report as a root that closed without answering.
    root->thread_ = std::thread([job = std::move(job)]() { (void)guardThread("bootstrap root", [&] { job->run(); }); });
  } catch (const std::system_error& e) {
    WARN("Cannot start the bootstrap root thread for %s: %s", where.c_str(), e.what());
    return ncclSystemError;
  }
  *out = std::move(root);
  return ncclSuccess;
}

std::chrono::milliseconds BootstrapRoot::idleTimeoutFromParams() {
  int64_t seconds = paramInt(ParamId::kUidIdleTimeout);
  return std::chrono::milliseconds(std::max<int64_t>(seconds, 0) * 1000);
}

BootstrapRoot::~BootstrapRoot() {
  if (thread_.joinable()) {
    stop_->store(true, std::memory_order_release);
    thread_.join();
  }
}

void BootstrapRoot::detach() {
  if (thread_.joinable()) thread_.detach();
}

void BootstrapRoot::join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace braid
