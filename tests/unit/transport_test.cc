// transport: the parts that need no GPU. The block layout, the names, file descriptors passed
// between processes over abstract Unix datagram sockets, POSIX shared memory segments between
// processes, grouping the channels and filling the connection structs from (fake) blocks, and the
// context checks of connectChannels. The CUDA parts (allocation, export, import, registration) run
// in tests/gpu.
#include "transport/transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "transport/connect_internal.h"
#include "transport/layout.h"
#include "transport/uds.h"
#include "util/check.h"
#include "util/pid_space.h"
#include "util/shm_segment.h"
#include "util/socket.h"

namespace braid::transport {
namespace {

using std::chrono::milliseconds;

constexpr size_t kDefaultBuff[kNumProtos] = {262144, 2457600, 4194304};

// Runs `body` in a forked child; returns its exit status (0: success), or -1 if it crashed.
int runChild(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string uniqueSuffix() {
  static int n = 0;
  return std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// ---- layout ----

TEST(TransportLayout, RecvBlockAlignsCountersAndBuffers) {
  const int n = 5;
  BlockLayout l = computeLayout(Role::kRecv, n, kDefaultBuff, 2u << 20);
  EXPECT_EQ(l.bytes % (2u << 20), 0u);
  EXPECT_EQ(l.buffersStart % kBufferAlign, 0u);
  EXPECT_GE(l.buffersStart, n * kCounterAlign);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(l.counterOffset(i), i * kCounterAlign);
    for (int p = 0; p < kNumProtos; ++p) {
      EXPECT_EQ(l.bufferOffset(i, p) % kBufferAlign, 0u);
      EXPECT_EQ(l.protoBytes[p], kDefaultBuff[p]);
    }
  }
  // Buffers do not overlap each other or the counters, and all fit in the block.
  std::vector<std::pair<size_t, size_t>> ranges = {{0, n * kCounterAlign}};
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < kNumProtos; ++p)
      ranges.emplace_back(l.bufferOffset(i, p), l.bufferOffset(i, p) + kDefaultBuff[p]);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); ++k) EXPECT_LE(ranges[k - 1].second, ranges[k].first);
  EXPECT_LE(ranges.back().second, l.bytes);
  // Granularity only changes the total, never an offset (the two ends may round differently).
  BlockLayout unrounded = computeLayout(Role::kRecv, n, kDefaultBuff, 1);
  EXPECT_EQ(unrounded.bufferOffset(n - 1, kProtoSimple), l.bufferOffset(n - 1, kProtoSimple));
  EXPECT_EQ(unrounded.bytes, ranges.back().second);
}

TEST(TransportLayout, SendBlockHoldsOnlyHeads) {
  BlockLayout l = computeLayout(Role::kSend, 3, kDefaultBuff, 1);
  EXPECT_EQ(l.bytes, 3 * kCounterAlign);
  EXPECT_EQ(l.counterOffset(2), 2 * kCounterAlign);
  EXPECT_EQ(computeLayout(Role::kSend, 3, kDefaultBuff, 2u << 20).bytes, 2u << 20);
}

TEST(TransportLayout, UnusedProtocolTakesNoSpace) {
  const size_t buff[kNumProtos] = {8192, 0, 4096 * 3};
  BlockLayout l = computeLayout(Role::kRecv, 2, buff, 1);
  EXPECT_EQ(l.buffersStart, 4096u);
  EXPECT_EQ(l.channelStride, 8192u + 4096 * 3);
  EXPECT_EQ(l.bufferOffset(1, kProtoSimple), 4096u + l.channelStride + 8192);
  EXPECT_EQ(l.bytes, 4096u + 2 * l.channelStride);
}

// ---- names ----

TEST(TransportNames, DistinctAndWithinLimits) {
  std::set<std::string> names;
  for (int rank = 0; rank < 3; ++rank) {
    for (uint64_t serial = 0; serial < 3; ++serial) {
      names.insert(udsSocketName(0xfedcba9876543210ull, rank, 4242, serial));
      for (const char* role : {"send", "recv"}) {
        std::string shm = shmSegmentName(0xfedcba9876543210ull, rank, 1, role, 4242, serial);
        EXPECT_EQ(shm[0], '/');
        EXPECT_EQ(shm.find('/', 1), std::string::npos);
        EXPECT_LT(shm.size(), 255u);
        names.insert(shm);
      }
    }
  }
  EXPECT_EQ(names.size(), 27u);
  std::string uds = udsSocketName(~0ull, 1 << 30, 1 << 30, ~0ull);
  EXPECT_LE(uds.size(), 100u);
  EXPECT_NE(udsSocketName(1, 0, 7, 0), udsSocketName(2, 0, 7, 0));
  EXPECT_NE(udsSocketName(1, 0, 7, 0), udsSocketName(1, 0, 8, 0));
}

// ---- Unix socket fd passing ----

struct Note {
  int32_t rank;  // the sender's, checked against its process (uds.h)
  int32_t value;
  uint64_t tag;
};
constexpr size_t kNoteRank = offsetof(Note, rank);

// Every rank a thread of this process.
std::vector<UdsSender> threadsOfThisProcess(int nranks) {
  std::vector<UdsSender> senders;
  for (int r = 0; r < nranks; ++r) senders.push_back(UdsSender{r, static_cast<int32_t>(::getpid()), localPidSpace()});
  return senders;
}

TEST(TransportUds, PassesAFileDescriptorBetweenProcesses) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  UniqueFd goRead(go[0]);
  UniqueFd goWrite(go[1]);
  const std::string dest = "braid-test-uds-" + uniqueSuffix();
  pid_t child = ::fork();
  if (child == 0) {
    goWrite.reset();
    char byte = 0;
    if (::read(goRead.get(), &byte, 1) != 1) ::_exit(1);  // the receiver is bound
    UdsSocket client;
    if (UdsSocket::bind("braid-test-udsc-" + uniqueSuffix(), "test client", {}, &client) != ncclSuccess) ::_exit(2);
    int pipeFds[2];
    if (::pipe(pipeFds) != 0) ::_exit(3);
    UniqueFd readEnd(pipeFds[0]);
    UniqueFd writeEnd(pipeFds[1]);
    const char text[] = "through the socket";
    if (::write(writeEnd.get(), text, sizeof(text)) != static_cast<ssize_t>(sizeof(text))) ::_exit(4);
    Deadline deadline = Deadline::after(milliseconds(5000));
    // A datagram of the wrong size first: the receiver must drop it and keep waiting.
    char junk[3] = {1, 2, 3};
    if (client.sendFd(dest, readEnd.get(), junk, sizeof(junk), deadline, "junk") != ncclSuccess) ::_exit(5);
    Note note{1, 42, 0xabcdef};
    if (client.sendFd(dest, readEnd.get(), &note, sizeof(note), deadline, "note") != ncclSuccess) ::_exit(6);
    ::_exit(0);  // our copies close here; the ones in flight stay open
  }
  ASSERT_GT(child, 0);
  goRead.reset();
  UdsSocket server;
  ASSERT_EQ(UdsSocket::bind(dest, "test server", {UdsSender{1, static_cast<int32_t>(child), localPidSpace()}}, &server),
            ncclSuccess);
  ASSERT_EQ(::write(goWrite.get(), "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  Note note{};
  UniqueFd fd;
  ASSERT_EQ(server.recvFd(&note, sizeof(note), kNoteRank, &fd, Deadline::after(milliseconds(5000)), "test"),
            ncclSuccess);
  EXPECT_EQ(note.tag, 0xabcdefu);
  EXPECT_EQ(note.value, 42);
  ASSERT_TRUE(fd.valid());
  EXPECT_NE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0);
  char buf[64] = {};
  ASSERT_GT(::read(fd.get(), buf, sizeof(buf)), 0);
  EXPECT_STREQ(buf, "through the socket");
}

TEST(TransportUds, ReceiveTimesOutAndHonoursAbort) {
  UdsSocket server;
  ASSERT_EQ(UdsSocket::bind("braid-test-uds-" + uniqueSuffix(), "test", {}, &server), ncclSuccess);
  Note note{};
  UniqueFd fd;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(server.recvFd(&note, sizeof(note), kNoteRank, &fd, Deadline::after(milliseconds(150)), "test"),
            ncclRemoteError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  std::atomic<int> abortFlag{1};
  EXPECT_EQ(
      server.recvFd(&note, sizeof(note), kNoteRank, &fd, Deadline::after(milliseconds(60000), &abortFlag), "test"),
      ncclInternalError);
  EXPECT_FALSE(fd.valid());
  // The sender's rank must lie inside the payload.
  bool got = true;
  EXPECT_EQ(server.tryRecvFd(&note, sizeof(note), sizeof(note) - 2, &fd, "test", &got), ncclInternalError);
}

TEST(TransportUds, SendToMissingSocketFailsAtOnce) {
  UdsSocket client;
  ASSERT_EQ(UdsSocket::bind("braid-test-uds-" + uniqueSuffix(), "test", {}, &client), ncclSuccess);
  Note note{};
  EXPECT_EQ(client.sendFd("braid-test-nobody-" + uniqueSuffix(), 0, &note, sizeof(note),
                          Deadline::after(milliseconds(60000)), "test"),
            ncclRemoteError);
}

// Every socket sends to every other at once, more datagrams each than a receive queue holds
// (net.unix.max_dgram_qlen, 10 by default): this finishes only because a sender drains its own
// socket while a peer's is full, as connect.cc does for 8 ranks all-to-all.
TEST(TransportUds, AllToAllExchangeBeyondTheQueueLengthCompletes) {
  constexpr int kRanks = 12;
  constexpr int kPerPeer = 2;
  std::vector<UdsSocket> sockets(kRanks);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(UdsSocket::bind("braid-test-uds-" + uniqueSuffix(), "rank " + std::to_string(r),
                              threadsOfThisProcess(kRanks), &sockets[r]),
              ncclSuccess);
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  UniqueFd readEnd(pipeFds[0]);
  UniqueFd writeEnd(pipeFds[1]);
  std::vector<std::vector<int>> seen(kRanks, std::vector<int>(kRanks, 0));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int me = 0; me < kRanks; ++me) {
    threads.emplace_back([&, me] {
      const Deadline deadline = Deadline::after(milliseconds(20000));
      const UdsSocket& sock = sockets[me];
      int received = 0;
      auto take = [&](const Note& note, UniqueFd fd) {
        if (fd.valid() && note.rank >= 0 && note.rank < kRanks) seen[me][note.rank]++;
        received++;
      };
      auto drain = [&]() -> ncclResult_t {
        Note note{};
        UniqueFd fd;
        bool got = true;
        while (got) {
          NCCLCHECK(sock.tryRecvFd(&note, sizeof(note), kNoteRank, &fd, "drain", &got));
          if (got) take(note, std::move(fd));
        }
        return ncclSuccess;
      };
      for (int k = 0; k < kPerPeer; ++k) {
        for (int peer = 0; peer < kRanks; ++peer) {
          if (peer == me) continue;
          Note note{me, k, 0};
          if (sock.sendFd(sockets[peer].name(), readEnd.get(), &note, sizeof(note), deadline, "send", drain) !=
              ncclSuccess)
            failures++;
        }
      }
      while (received < kPerPeer * (kRanks - 1) && failures.load() == 0) {
        Note note{};
        UniqueFd fd;
        if (sock.recvFd(&note, sizeof(note), kNoteRank, &fd, deadline, "recv") != ncclSuccess) {
          failures++;
          break;
        }
        take(note, std::move(fd));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  for (int me = 0; me < kRanks; ++me)
    for (int from = 0; from < kRanks; ++from) EXPECT_EQ(seen[me][from], from == me ? 0 : kPerPeer) << me << " " << from;
}

TEST(TransportUds, NameInUseIsAnError) {
  std::string name = "braid-test-uds-" + uniqueSuffix();
  UdsSocket first;
  UdsSocket second;
  ASSERT_EQ(UdsSocket::bind(name, "test", {}, &first), ncclSuccess);
  EXPECT_EQ(UdsSocket::bind(name, "test", {}, &second), ncclSystemError);
  EXPECT_EQ(UdsSocket::bind(std::string(200, 'x'), "test", {}, &second), ncclInternalError);
}

// ---- shared memory segments ----

bool shmExists(const std::string& name) {
  int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

TEST(TransportShm, PeerOpensWritesAndUnlinks) {
  std::string name = shmSegmentName(0x1234, 0, 1, "recv", ::getpid(), 7000 + std::rand() % 1000);
  const size_t bytes = 3 * 4096;
  ShmSegment segment;
  ASSERT_EQ(ShmSegment::create(name, bytes, "test creator", &segment), ncclSuccess);
  ASSERT_NE(segment.ptr(), nullptr);
  auto* words = static_cast<volatile uint64_t*>(segment.ptr());
  for (size_t i = 0; i < bytes / 8; ++i) ASSERT_EQ(words[i], 0u) << "segment not zeroed at word " << i;
  words[0] = 0x1111;
  int status = runChild([&]() {
    ShmSegment peer;
    if (ShmSegment::openAndUnlink(name, bytes, "test peer", &peer) != ncclSuccess) return 2;
    auto* w = static_cast<volatile uint64_t*>(peer.ptr());
    if (w[0] != 0x1111) return 3;
    w[bytes / 8 - 1] = 0x2222;
    return shmExists(name) ? 4 : 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(words[bytes / 8 - 1], 0x2222u);
  EXPECT_FALSE(shmExists(name));
  segment.reset();  // unlinking again (ENOENT) is harmless
}

TEST(TransportShm, CreatorRemovesTheNameIfThePeerNeverCame) {
  std::string name = shmSegmentName(0x1234, 0, 1, "send", ::getpid(), 8000 + std::rand() % 1000);
  {
    ShmSegment segment;
    ASSERT_EQ(ShmSegment::create(name, 4096, "test", &segment), ncclSuccess);
    EXPECT_TRUE(shmExists(name));
    ShmSegment again;
    EXPECT_EQ(ShmSegment::create(name, 4096, "test", &again), ncclSystemError);  // O_EXCL
  }
  EXPECT_FALSE(shmExists(name));
}

TEST(TransportShm, SizeMismatchAndMissingSegmentAreErrors) {
  std::string name = shmSegmentName(0x1234, 2, 3, "recv", ::getpid(), 9000 + std::rand() % 1000);
  ShmSegment segment;
  ASSERT_EQ(ShmSegment::create(name, 4096, "test", &segment), ncclSuccess);
  ShmSegment peer;
  EXPECT_EQ(ShmSegment::openAndUnlink(name, 8192, "test", &peer), ncclInternalError);
  EXPECT_EQ(peer.ptr(), nullptr);
  EXPECT_EQ(ShmSegment::openAndUnlink(name, 4096, "test", &peer), ncclSystemError);  // unlinked by the first open
}

// ---- grouping and connection structs ----

class FakeBlock final : public Block {
 public:
  FakeBlock(char* base, size_t bytes) {
    devPtr_ = base;
    bytes_ = bytes;
  }
};

// fillConns over two fake blocks shared by every group: heads in a small one, receive buffers in a
// large one. Only addresses are computed; nothing is dereferenced.
void fillWithFakeBlocks(std::vector<Group>* groups, const size_t buffBytes[kNumProtos], std::vector<DevSendConn>* send,
                        std::vector<DevRecvConn>* recv) {
  FakeBlock blocks[2] = {{reinterpret_cast<char*>(0x1000), 4096}, {reinterpret_cast<char*>(0x100000), 1u << 30}};
  for (Group& g : *groups) {
    g.local = &blocks[g.role == Role::kSend ? 0 : 1];
    g.remote = &blocks[g.role == Role::kSend ? 1 : 0];
  }
  fillConns(*groups, buffBytes, send, recv);
  for (Group& g : *groups) g.local = g.remote = nullptr;  // the blocks end here
}

Context makeContext(int rank, int nranks, Bootstrap* bootstrap) {
  Context ctx{};
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.cudaDev = rank;
  ctx.commHash = 0x77;
  ctx.bootstrap = bootstrap;
  for (int r = 0; r < nranks; ++r)
    ctx.peers.push_back(RankPlace{r, r, r, 0x5, r < 2 ? 0x10u : 0x20u, r < 2 ? 100 : 200, 0x42});
  std::copy(kDefaultBuff, kDefaultBuff + kNumProtos, ctx.buffBytes);
  return ctx;
}

TEST(TransportGroups, OneGroupPerPeerDirectionAndKind) {
  Context ctx = makeContext(1, 3, nullptr);
  // Ring 0 -> 1 -> 2 on channels 0 and 2, the reverse ring on channel 1, channel 3 like 0 over SHM.
  std::vector<ChannelLinks> channels = {{2, Kind::kP2p, 0, Kind::kP2p},
                                        {0, Kind::kP2p, 2, Kind::kP2p},
                                        {2, Kind::kP2p, 0, Kind::kP2p},
                                        {2, Kind::kShm, 0, Kind::kShm}};
  std::vector<Group> groups = makeGroups(ctx, channels);
  ASSERT_EQ(groups.size(), 6u);
  // Ordered by (peer, kind, role).
  EXPECT_EQ(groups[0].peer, 0);
  EXPECT_EQ(groups[0].kind, Kind::kP2p);
  EXPECT_EQ(groups[0].role, Role::kSend);
  EXPECT_EQ(groups[0].channels, std::vector<int>({1}));
  EXPECT_FALSE(groups[0].crossProcess);  // ranks 0 and 1 share a pidHash
  EXPECT_EQ(groups[1].role, Role::kRecv);
  EXPECT_EQ(groups[1].channels, std::vector<int>({0, 2}));
  EXPECT_EQ(groups[1].channelMask, 0x5u);
  EXPECT_EQ(groups[2].kind, Kind::kShm);
  EXPECT_EQ(groups[2].channels, std::vector<int>({3}));
  EXPECT_EQ(groups[3].peer, 2);
  EXPECT_EQ(groups[3].role, Role::kSend);
  EXPECT_EQ(groups[3].channels, std::vector<int>({0, 2}));
  EXPECT_TRUE(groups[3].crossProcess);
  EXPECT_NE(groups[3].what.find("peer rank 2"), std::string::npos);
  EXPECT_NE(groups[3].what.find("channels 0,2"), std::string::npos);
  EXPECT_EQ(groups[1].layout.bytes, computeLayout(Role::kRecv, 2, kDefaultBuff, 1).bytes);
}

// kNoPeer leaves a direction (or a whole channel) unconnected: no group names it, its connection
// stays zero, and the channel numbers of the others are kept (tree edges, launch/comm_connect.cc).
TEST(TransportGroups, NoPeerChannelsAreHolesThatKeepTheNumbering) {
  Context ctx = makeContext(1, 3, nullptr);
  std::vector<ChannelLinks> channels = {{kNoPeer, Kind::kP2p, kNoPeer, Kind::kP2p},
                                        {2, Kind::kP2p, kNoPeer, Kind::kP2p},
                                        {kNoPeer, Kind::kP2p, 0, Kind::kP2p},
                                        {0, Kind::kP2p, 0, Kind::kP2p}};
  std::vector<Group> groups = makeGroups(ctx, channels);
  ASSERT_EQ(groups.size(), 3u);  // send to 0 (3), recv from 0 (2, 3), send to 2 (1)
  EXPECT_EQ(groups[0].peer, 0);
  EXPECT_EQ(groups[0].role, Role::kSend);
  EXPECT_EQ(groups[0].channels, std::vector<int>({3}));
  EXPECT_EQ(groups[1].role, Role::kRecv);
  EXPECT_EQ(groups[1].channels, std::vector<int>({2, 3}));
  EXPECT_EQ(groups[1].channelMask, 0xcu);
  EXPECT_EQ(groups[2].peer, 2);
  EXPECT_EQ(groups[2].channels, std::vector<int>({1}));
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  fillWithFakeBlocks(&groups, ctx.buffBytes, &send, &recv);
  ASSERT_EQ(send.size(), 4u);
  EXPECT_EQ(send[0].head, nullptr);
  EXPECT_EQ(recv[0].tail, nullptr);
  EXPECT_NE(send[1].head, nullptr);
  EXPECT_EQ(recv[1].tail, nullptr);
  EXPECT_EQ(send[2].head, nullptr);
  EXPECT_NE(recv[2].tail, nullptr);
}

TEST(TransportGroups, FillConnsPointsIntoTheRightBlocks) {
  Context ctx = makeContext(0, 2, nullptr);
  std::vector<ChannelLinks> channels = {{1, Kind::kP2p, 1, Kind::kP2p}, {1, Kind::kP2p, 1, Kind::kP2p}};
  std::vector<Group> groups = makeGroups(ctx, channels);
  ASSERT_EQ(groups.size(), 2u);  // send to 1, recv from 1
  // Fake address ranges: nothing is dereferenced.
  char* localHeads = reinterpret_cast<char*>(0x100000000ull);
  char* peerRecv = reinterpret_cast<char*>(0x200000000ull);
  char* localRecv = reinterpret_cast<char*>(0x300000000ull);
  char* peerHeads = reinterpret_cast<char*>(0x400000000ull);
  FakeBlock blocks[4] = {{localHeads, 4096}, {peerRecv, 1u << 30}, {localRecv, 1u << 30}, {peerHeads, 4096}};
  groups[0].local = &blocks[0];
  groups[0].remote = &blocks[1];
  groups[1].local = &blocks[2];
  groups[1].remote = &blocks[3];
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  fillConns(groups, ctx.buffBytes, &send, &recv);
  ASSERT_EQ(send.size(), 2u);
  ASSERT_EQ(recv.size(), 2u);
  BlockLayout rl = computeLayout(Role::kRecv, 2, kDefaultBuff, 1);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(send[c].head, reinterpret_cast<uint64_t*>(localHeads + c * kCounterAlign));
    EXPECT_EQ(send[c].tail, reinterpret_cast<uint64_t*>(peerRecv + c * kCounterAlign));
    EXPECT_EQ(recv[c].tail, reinterpret_cast<uint64_t*>(localRecv + c * kCounterAlign));
    EXPECT_EQ(recv[c].head, reinterpret_cast<uint64_t*>(peerHeads + c * kCounterAlign));
    for (int p = 0; p < kNumProtos; ++p) {
      EXPECT_EQ(send[c].buffs[p], peerRecv + rl.bufferOffset(c, p));
      EXPECT_EQ(recv[c].buffs[p], localRecv + rl.bufferOffset(c, p));
    }
    EXPECT_EQ(send[c].step, 0u);
    EXPECT_EQ(recv[c].step, 0u);
  }
}

TEST(TransportGroups, UnusedProtocolGetsNullBuffers) {
  Context ctx = makeContext(0, 2, nullptr);
  ctx.buffBytes[kProtoLL128] = 0;
  std::vector<Group> groups = makeGroups(ctx, {{1, Kind::kShm, 1, Kind::kShm}});
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  fillWithFakeBlocks(&groups, ctx.buffBytes, &send, &recv);
  EXPECT_EQ(send[0].buffs[kProtoLL128], nullptr);
  EXPECT_EQ(recv[0].buffs[kProtoLL128], nullptr);
  EXPECT_NE(recv[0].buffs[kProtoSimple], nullptr);
}

// A Bootstrap that must never be used: the checks fail before any message.
class NoBootstrap final : public Bootstrap {
 public:
  NoBootstrap() : Bootstrap(0, 2) {}
  ncclResult_t allGather(void*, size_t) override { return ncclInternalError; }
  ncclResult_t barrier() override { return ncclInternalError; }
  ncclResult_t broadcast(void*, size_t, int) override { return ncclInternalError; }
  ncclResult_t send(int, int, const void*, size_t) override { return ncclInternalError; }
  ncclResult_t recv(int, int, void*, size_t) override { return ncclInternalError; }
};

TEST(TransportGroups, ConnectRejectsBadContexts) {
  NoBootstrap bootstrap;
  std::vector<ChannelLinks> ring = {{1, Kind::kP2p, 1, Kind::kP2p}};
  std::unique_ptr<Connections> conns;
  std::vector<DevSendConn> send;
  std::vector<DevRecvConn> recv;
  Context ok = makeContext(0, 2, &bootstrap);
  EXPECT_EQ(checkContext(ok, ring), ncclSuccess);

  Context noBootstrap = makeContext(0, 2, nullptr);
  EXPECT_EQ(connectChannels(noBootstrap, ring, &conns, &send, &recv), ncclInternalError);
  EXPECT_EQ(conns, nullptr);

  EXPECT_EQ(checkContext(ok, {{2, Kind::kP2p, 1, Kind::kP2p}}), ncclInternalError);  // no rank 2
  EXPECT_EQ(checkContext(ok, {{kNoPeer, Kind::kP2p, 1, Kind::kP2p}, {kNoPeer, Kind::kP2p, kNoPeer, Kind::kP2p}}),
            ncclSuccess);
  EXPECT_EQ(checkContext(ok, {{-2, Kind::kP2p, 1, Kind::kP2p}}), ncclInternalError);  // neither a rank nor kNoPeer
  EXPECT_EQ(checkContext(ok, {{1, static_cast<Kind>(7), 1, Kind::kP2p}}), ncclInternalError);
  EXPECT_EQ(checkContext(ok, std::vector<ChannelLinks>(kMaxConnectChannels + 1, ring[0])), ncclInternalError);

  Context otherHost = ok;
  otherHost.peers[1].hostHash = 0x6;
  EXPECT_EQ(checkContext(otherHost, ring), ncclInternalError);

  Context oddSize = ok;
  oddSize.buffBytes[kProtoSimple] = 4096 * 3 + 8;
  EXPECT_EQ(checkContext(oddSize, ring), ncclInternalError);

  Context missingPeers = ok;
  missingPeers.peers.pop_back();
  EXPECT_EQ(connectChannels(missingPeers, ring, &conns, &send, &recv), ncclInternalError);
}

}  // namespace
}  // namespace braid::transport
