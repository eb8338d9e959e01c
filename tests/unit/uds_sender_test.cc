// Who may pass file descriptors to a rank (transport/uds.h). The sockets have abstract names, so
// no file permission keeps anyone out: every process of the host can send to them. Here real
// processes send real datagrams: a forked child that is not a process of the job, one that is but
// names another rank, one of another user, one in another pid namespace; the receiver must drop
// what they send, close every descriptor that came with it (counted in /proc/self/fd), say who sent
// it, and still accept the legitimate peer. FdInbox keeps only the descriptors a receiver expects.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "transport/transport.h"
#include "transport/uds.h"
#include "util/log.h"
#include "util/pid_space.h"
#include "util/unique_fd.h"

namespace braid::transport {
namespace {

using std::chrono::milliseconds;

struct Note {
  int32_t rank;
  int32_t value;
};
constexpr size_t kNoteRank = offsetof(Note, rank);

std::string uniqueName() {
  static int n = 0;
  return "braid-test-peer-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

size_t openFds() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) n += entry.is_symlink() ? 1 : 0;
  return n;
}

bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// One datagram to the abstract name `dest` with `nFds` descriptors of /dev/null, from a fresh
// socket, the way a stranger can send it (no UdsSocket involved).
bool sendRaw(const std::string& dest, const Note& note, int nFds) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, dest.data(), dest.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + dest.size());
  std::vector<int> fds;
  for (int i = 0; i < nFds; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  iovec iov{const_cast<Note*>(&note), sizeof(note)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nFds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<size_t>(nFds));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<size_t>(nFds));
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * static_cast<size_t>(nFds));
  }
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool sent = sock >= 0 && ::sendmsg(sock, &msg, 0) == static_cast<ssize_t>(sizeof(note));
  if (sock >= 0) ::close(sock);
  for (int fd : fds) ::close(fd);
  return sent;
}

// A forked child that runs `body` once the parent says go (the receiver is bound by then).
class Child {
 public:
  explicit Child(const std::function<int()>& body) {
    int go[2];
    if (::pipe(go) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(go[1]);
      char byte = 0;
      ::_exit(::read(go[0], &byte, 1) == 1 ? body() : 100);
    }
    ::close(go[0]);
    go_ = UniqueFd(go[1]);
  }
  ~Child() {
    go_.reset();  // a child never told to go exits
    if (pid_ > 0 && !waited_) ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // Lets it run and waits for its exit status (-1: it crashed).
  int run() {
    if (pid_ <= 0 || ::write(go_.get(), "g", 1) != 1) return -1;
    int status = 0;
    waited_ = ::waitpid(pid_, &status, 0) == pid_;
    return waited_ && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd go_;
  bool waited_ = false;
};

// Takes every datagram queued on `server` that it accepts: their values.
std::vector<int> acceptAll(const UdsSocket& server) {
  std::vector<int> values;
  while (true) {
    Note note{};
    UniqueFd fd;
    bool got = false;
    if (server.tryRecvFd(&note, sizeof(note), kNoteRank, &fd, "test", &got) != ncclSuccess || !got) return values;
    EXPECT_TRUE(fd.valid());
    values.push_back(note.value);
  }
}

UdsSender senderOf(int rank, pid_t pid) { return UdsSender{rank, static_cast<int32_t>(pid), localPidSpace()}; }

TEST(UdsSenders, AStrangerIsDroppedWithEveryDescriptorClosedAndThePeerAccepted) {
  const std::string name = uniqueName();
  Child peer([&] { return sendRaw(name, Note{1, 11}, 1) ? 0 : 1; });
  Child stranger([&] {
    for (int i = 0; i < 5; ++i) {
      if (!sendRaw(name, Note{1, 99}, 3)) return 1;  // claims to be rank 1, with 3 descriptors each
    }
    return 0;
  });
  UdsSocket server;
  ASSERT_EQ(UdsSocket::bind(name, "rank 0", {senderOf(1, peer.pid())}, &server), ncclSuccess);
  const size_t before = openFds();
  ASSERT_EQ(stranger.run(), 0);
  ASSERT_EQ(peer.run(), 0);
  EXPECT_EQ(acceptAll(server), std::vector<int>({11}));
  EXPECT_EQ(openFds(), before);  // 15 of the stranger's descriptors came and went; the peer's was closed
  const std::string warn = logLastError();
  EXPECT_NE(warn.find("pid " + std::to_string(stranger.pid())), std::string::npos) << warn;
  EXPECT_NE(warn.find("not a process of this job"), std::string::npos) << warn;
}

TEST(UdsSenders, APeerThatNamesAnotherRankIsDropped) {
  const std::string name = uniqueName();
  Child peer([&] { return sendRaw(name, Note{2, 22}, 1) && sendRaw(name, Note{1, 11}, 1) ? 0 : 1; });
  UdsSocket server;
  // Rank 2 lives in another process (this one, which never sends).
  ASSERT_EQ(UdsSocket::bind(name, "rank 0", {senderOf(1, peer.pid()), senderOf(2, ::getpid())}, &server), ncclSuccess);
  const size_t before = openFds();
  ASSERT_EQ(peer.run(), 0);
  EXPECT_EQ(acceptAll(server), std::vector<int>({11}));
  EXPECT_EQ(openFds(), before);
  const std::string warn = logLastError();
  EXPECT_NE(warn.find("claimed to be rank 2"), std::string::npos) << warn;
}

TEST(UdsSenders, AnotherUserIsDroppedEvenFromAPeersPid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to send as another user";
  const std::string name = uniqueName();
  Child other([&] {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) return 2;
    return sendRaw(name, Note{1, 33}, 2) ? 0 : 1;
  });
  UdsSocket server;
  ASSERT_EQ(UdsSocket::bind(name, "rank 0", {senderOf(1, other.pid())}, &server), ncclSuccess);
  const size_t before = openFds();
  ASSERT_EQ(other.run(), 0);
  EXPECT_TRUE(acceptAll(server).empty());
  EXPECT_EQ(openFds(), before);
  const std::string warn = logLastError();
  EXPECT_NE(warn.find("uid 65534, another user"), std::string::npos) << warn;
}

// A rank in a pid namespace of its own (a container): it knows itself as pid 1 of another pid
// space; the receiver finds it through /proc, and a stranger of our namespace cannot pass for it.
TEST(UdsSenders, ARankInAnotherPidNamespaceIsRecognised) {
  int info[2];
  int bound[2];
  ASSERT_EQ(::pipe(info), 0);
  ASSERT_EQ(::pipe(bound), 0);
  UniqueFd infoRead(info[0]);
  UniqueFd infoWrite(info[1]);
  UniqueFd boundRead(bound[0]);
  UniqueFd boundWrite(bound[1]);
  const std::string name = uniqueName();
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    infoRead.reset();
    boundWrite.reset();
    if (::unshare(CLONE_NEWPID) != 0) ::_exit(3);  // not permitted here
    const pid_t inner = ::fork();                  // pid 1 of the new namespace
    if (inner == 0) {
      const UdsSender self{1, static_cast<int32_t>(::getpid()), localPidSpace()};
      if (::write(infoWrite.get(), &self, sizeof(self)) != static_cast<ssize_t>(sizeof(self))) ::_exit(1);
      char byte = 0;
      if (::read(boundRead.get(), &byte, 1) != 1) ::_exit(2);
      const bool sent = sendRaw(name, Note{1, 44}, 1);
      // Alive until the receiver has read it: it looks the sender up in /proc.
      if (::read(boundRead.get(), &byte, 1) != 1) ::_exit(2);
      ::_exit(sent ? 0 : 1);
    }
    int status = 0;
    ::_exit(inner > 0 && ::waitpid(inner, &status, 0) == inner && WIFEXITED(status) ? WEXITSTATUS(status) : 4);
  }
  ASSERT_GT(launcher, 0);
  infoWrite.reset();
  boundRead.reset();
  UdsSender inner{};
  const bool reported = ::read(infoRead.get(), &inner, sizeof(inner)) == static_cast<ssize_t>(sizeof(inner));
  int status = 0;
  if (!reported) {
    ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) GTEST_SKIP() << "creating a pid namespace is not permitted here";
    FAIL() << "the child in a new pid namespace did not report";
  }
  EXPECT_EQ(inner.pid, 1);
  EXPECT_NE(inner.pidSpace, localPidSpace());
  Child stranger([&] { return sendRaw(name, Note{1, 99}, 1) ? 0 : 1; });
  UdsSocket server;
  ASSERT_EQ(UdsSocket::bind(name, "rank 0", {inner}, &server), ncclSuccess);
  const size_t before = openFds();
  ASSERT_EQ(stranger.run(), 0);
  ASSERT_EQ(::write(boundWrite.get(), "b", 1), 1);
  std::vector<int> accepted;
  {
    Note note{};
    UniqueFd fd;
    if (server.recvFd(&note, sizeof(note), kNoteRank, &fd, Deadline::after(milliseconds(5000)), "test") ==
        ncclSuccess) {
      accepted.push_back(note.value);
    }
  }
  ASSERT_EQ(::write(boundWrite.get(), "x", 1), 1);
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(accepted, std::vector<int>({44}));  // the stranger's datagram, first in the queue, was dropped
  EXPECT_TRUE(acceptAll(server).empty());
  EXPECT_EQ(openFds(), before);
}

TEST(UdsSenders, MatchingByPidAndPidSpace) {
  const uint64_t own = 0x1111;
  const std::vector<UdsSender> senders = {{1, 500, own}, {2, 500, own}, {3, 7, 0x2222}, {4, 600, own}};
  UdsCredentials cred;
  EXPECT_TRUE(udsSenderRanks(senders, own, cred).empty());  // no credentials: nobody
  cred.present = true;
  cred.pid = 500;
  EXPECT_EQ(udsSenderRanks(senders, own, cred), std::vector<int>({1, 2}));  // two ranks of one process
  cred.pid = 601;
  EXPECT_TRUE(udsSenderRanks(senders, own, cred).empty());
  cred.pid = 0;  // hidden from our namespace: only a rank of another pid space may be it
  EXPECT_EQ(udsSenderRanks(senders, own, cred), std::vector<int>({3}));
  // A visible process of another pid space is looked up in /proc: this one, as another space sees it.
  const std::vector<UdsSender> foreign = {{5, innermostPidOf(::getpid()), localPidSpace()}};
  cred.pid = ::getpid();
  EXPECT_EQ(udsSenderRanks(foreign, own, cred), std::vector<int>({5}));
  cred.pid = ::getppid();
  EXPECT_TRUE(udsSenderRanks(foreign, own, cred).empty());
  // A rank whose pid space is unknown (its /proc did not tell) matches by pid as it is.
  cred.pid = 900;
  EXPECT_EQ(udsSenderRanks({{6, 900, 0}}, own, cred), std::vector<int>({6}));
  cred.pid = 0;
  EXPECT_TRUE(udsSenderRanks({{6, 900, 0}}, own, cred).empty());
}

TEST(UdsSenders, TheRanksOfThisHostButNotSelf) {
  std::vector<RankPlace> peers = {{0, 0, 0, 0xa, 0x1, 10, 0x5},
                                  {1, 1, 1, 0xa, 0x2, 11, 0x5},
                                  {2, 0, 2, 0xb, 0x3, 12, 0x6},
                                  {3, 2, 3, 0xa, 0x4, 13, 0x7}};
  const std::vector<UdsSender> senders = udsSendersOf(peers, 1);
  ASSERT_EQ(senders.size(), 2u);
  EXPECT_EQ(senders[0].rank, 0);
  EXPECT_EQ(senders[0].pid, 10);
  EXPECT_EQ(senders[1].rank, 3);
  EXPECT_EQ(senders[1].pidSpace, 0x7u);
  EXPECT_TRUE(udsSendersOf(peers, 9).empty());
}

TEST(FdInbox, KeepsOnlyWhatItExpectsOnceEach) {
  auto devNull = [] { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); };
  FdInbox inbox;
  inbox.expect({1, 7, 0});
  inbox.expect({2, 7, 0});
  EXPECT_EQ(inbox.expected(), 2u);
  UniqueFd stray = devNull();
  const int strayFd = stray.get();
  EXPECT_FALSE(inbox.offer({3, 7, 0}, std::move(stray)));  // not expected: closed
  EXPECT_FALSE(isOpen(strayFd));
  UniqueFd first = devNull();
  const int firstFd = first.get();
  EXPECT_TRUE(inbox.offer({1, 7, 0}, std::move(first)));
  UniqueFd second = devNull();
  const int secondFd = second.get();
  EXPECT_FALSE(inbox.offer({1, 7, 0}, std::move(second)));  // one per key
  EXPECT_FALSE(isOpen(secondFd));
  EXPECT_EQ(inbox.held(), 1u);
  UniqueFd taken;
  EXPECT_FALSE(inbox.take({2, 7, 0}, &taken));  // expected, not arrived
  ASSERT_TRUE(inbox.take({1, 7, 0}, &taken));
  EXPECT_EQ(taken.get(), firstFd);
  UniqueFd late = devNull();
  const int lateFd = late.get();
  EXPECT_FALSE(inbox.offer({1, 7, 0}, std::move(late)));  // taken already: no longer expected
  EXPECT_FALSE(isOpen(lateFd));
  UniqueFd pending = devNull();
  const int pendingFd = pending.get();
  {
    FdInbox::Round round(&inbox);
    EXPECT_TRUE(inbox.offer({2, 7, 0}, std::move(pending)));
  }
  EXPECT_FALSE(isOpen(pendingFd));  // the round ended with it untaken
  EXPECT_EQ(inbox.expected(), 0u);
}

}  // namespace
}  // namespace braid::transport
