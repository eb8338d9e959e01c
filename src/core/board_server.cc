#include "core/board_server.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/board_wire.h"
#include "util/log.h"
#include "util/net_if.h"
#include "util/params.h"
#include "util/shm_segment.h"
#include "util/thread_guard.h"

namespace braid {
namespace {

constexpr std::chrono::milliseconds kAnswerTimeout{1000};

// The board a request names (already checked by parseBoardRequest), copied now, or empty when
// this process has none such.
std::vector<uint64_t> copyOwnBoard(const BoardRequest& request) {
  const size_t bytes = progressBoardBytes(request.nRanks);
  ShmSegment segment;
  if (ShmSegment::openReadOnly(progressBoardName(request.commHash, request.rank, static_cast<int>(::getpid())), bytes,
                               &segment) != ncclSuccess) {
    return {};
  }
  std::vector<uint64_t> words(bytes / sizeof(uint64_t));
  std::memcpy(words.data(), segment.ptr(), bytes);
  return words;
}

void answer(AcceptedConnection* connection) {
  BoardRequest request{};
  const bool known =
      parseBoardRequest(reinterpret_cast<const uint8_t*>(connection->hello.data()), connection->hello.size(), &request);
  const std::vector<uint64_t> words = known ? copyOwnBoard(request) : std::vector<uint64_t>{};
  const BoardAnswerHeader header{kBoardServerMagic, monotonicNs(), words.size() * sizeof(uint64_t)};
  const Deadline deadline = Deadline::after(kAnswerTimeout);
  if (connection->socket.sendAll(&header, sizeof(header), deadline) == ncclSuccess && header.bytes > 0) {
    (void)connection->socket.sendAll(words.data(), header.bytes, deadline);
  }
}

// The server thread: waits in poll() for requests (no timeout while no handshake is pending) and
// answers each at once; ends only when its listener fails.
void serve(SocketAcceptor acceptor) {
  for (;;) {
    std::vector<pollfd> fds;
    acceptor.addPollFds(&fds);
    // Pending handshakes expire on time only if progress() runs: wake up for them.
    const int timeoutMs = fds.size() > 1 ? kSocketPollSliceMs : -1;
    if (::poll(fds.data(), fds.size(), timeoutMs) < 0 && errno != EINTR) {
      INFO(kLogInit, "board server: poll() failed: %s; hang reports on other hosts will not know this process's ranks",
           strerror(errno));
      return;
    }
    if (acceptor.progress() != ncclSuccess) return;  // progress WARNed why
    AcceptedConnection connection;
    while (acceptor.takeReady(&connection)) answer(&connection);
  }
}

SocketAddress startServer() {
  SocketAddress none{};
  none.sa.sa_family = AF_UNSPEC;
  NetIf netIf;
  Socket listener;
  if (netIfFindBootstrap(nullptr, &netIf) != ncclSuccess ||
      Socket::listen(netIf.addr, kBoardServerMagic, SocketType::kRas, &listener) != ncclSuccess) {
    INFO(kLogInit,
         "board server: not started (see above); hang reports on other hosts will not know this process's "
         "ranks");
    return none;
  }
  const SocketAddress address = listener.localAddress();
  // Detached: it holds no state of the library, and the process may exit while it waits.
  std::thread([acceptor = SocketAcceptor(std::move(listener), sizeof(BoardRequest))]() mutable {
    (void)guardThread("board server", [&] { serve(std::move(acceptor)); });
  }).detach();
  INFO(kLogInit, "board server listening on %s", socketAddressToString(address).c_str());
  return address;
}

}  // namespace

SocketAddress boardServerAddress() {
  if (paramInt(ParamId::kHangReportMs) <= 0 || paramInt(ParamId::kPeerWatchMs) <= 0) return SocketAddress{};
  static std::once_flag once;
  static SocketAddress address{};
  std::call_once(once, [] { address = startServer(); });
  return address;
}

bool fetchBoard(const SocketAddress& server, uint64_t commHash, int rank, int nRanks, const Deadline& deadline,
                FetchedBoard* out) {
  if (!socketAddressIsValid(server) || nRanks < 1 || nRanks > kMaxBoardRanks) return false;
  const int64_t askedNs = monotonicNs();
  Socket socket;
  if (Socket::connect(server, kBoardServerMagic, SocketType::kRas, "the board server of rank " + std::to_string(rank),
                      false, deadline, &socket) != ncclSuccess) {
    return false;
  }
  const BoardRequest request{commHash, rank, nRanks};
  uint8_t received[sizeof(BoardAnswerHeader)];
  if (socket.sendAll(&request, sizeof(request), deadline) != ncclSuccess ||
      socket.recvAll(received, sizeof(received), deadline) != ncclSuccess) {
    return false;
  }
  const int64_t answeredNs = monotonicNs();
  const size_t bytes = progressBoardBytes(nRanks);
  BoardAnswerHeader header{};
  if (!parseBoardAnswerHeader(received, sizeof(received), bytes, &header)) return false;  // 0 bytes: no such board
  out->words.assign(bytes / sizeof(uint64_t), 0);
  if (socket.recvAll(out->words.data(), bytes, deadline) != ncclSuccess) return false;
  // The server copied the board between our request and its answer: take the middle.
  out->clockOffsetNs = askedNs + (answeredNs - askedNs) / 2 - header.nowNs;
  const ProgressBoard* board = out->board();
  return board->magic == kProgressBoardMagic && board->rank == rank && board->nRanks == nRanks;
}

}  // namespace braid
