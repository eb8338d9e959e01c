// Hang diagnosis across hosts: the progress boards (progress_board.h) of ranks on other hosts, read
// over TCP. A board lives in shared memory, which only the processes of one host (and one pid
// namespace) can map; a rank elsewhere asks the board's process for a copy instead.
//
// Each process that may be asked serves its own boards: one thread, started with the first
// communicator while hang reports are on, listening on the bootstrap interface. Its address and a
// secret it draws at start (getrandom, 32 bytes) go to the ranks of every communicator of this
// process in their peer information (core/peer_info.h); every connection must prove that it holds
// the secret (and the job's BRAID_COMM_SECRET, if any) with the socket handshake
// (util/socket_auth.h, socketAuthKeyForSecret) before the server reads a request. A stranger, or
// a process of another job, is refused after the challenge, having learnt nothing; the server goes
// on serving. A request names a board (communicator hash, rank, ranks); the answer is
// the board's bytes as they are now and the server's CLOCK_MONOTONIC, so that the asker can move the
// board's launch times onto its own clock. The server makes no CUDA call and takes no lock of the
// library: it answers while GPUs are stuck and while the asker's watch thread holds the registry.
// It waits in poll(), so it costs nothing while nobody asks.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <vector>

#include "util/socket.h"
#include "watch/progress_board.h"

namespace braid::watch {

constexpr size_t kBoardSecretBytes = 32;

// What a process tells its peers of its board server: where it listens, and the secret that opens it.
struct BoardServerContact {
  SocketAddress address;  // AF_UNSPEC: no server
  uint8_t secret[kBoardSecretBytes];
};
static_assert(sizeof(BoardServerContact) == 60, "it crosses process boundaries in PeerInfo: keep it packed");

// This process's board server, started on first use; an address with family AF_UNSPEC (invalid)
// and no secret (zeros) when hang reports are off (BRAID_HANG_REPORT_MS or BRAID_PEER_WATCH_MS 0)
// or it could not start (said once, at INFO: reports then say "not known" for this process's ranks,
// nothing else changes).
BoardServerContact boardServerContact();

// A copy of another process's board.
struct FetchedBoard {
  std::vector<uint64_t> words;  // the board and the per-peer counts after it (progressBoardBytes)
  int64_t clockOffsetNs = 0;    // add to the board's CLOCK_MONOTONIC times to get this host's
  const ProgressBoard* board() const { return reinterpret_cast<const ProgressBoard*>(words.data()); }
};

// Asks the server of `server` for rank's board of the communicator (commHash, nRanks), proving the
// server's secret. False when there is no answer before `deadline` (the socket layer WARNs why:
// refused, unreachable, timed out, the server did not take our proof), the server has no such
// board, or the answer is not a board of that rank: the caller reports the rank as not known.
bool fetchBoard(const BoardServerContact& server, uint64_t commHash, int rank, int nRanks, const Deadline& deadline,
                FetchedBoard* out);

}  // namespace braid::watch
