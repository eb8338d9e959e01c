// Hang diagnosis across hosts: the progress boards (progress_board.h) of ranks on other hosts, read
// over TCP. A board lives in shared memory, which only the processes of one host (and one pid
// namespace) can map; a rank elsewhere asks the board's process for a copy instead.
//
// Each process that may be asked serves its own boards: one thread, started with the first
// communicator while hang reports are on, listening on the bootstrap interface (its address goes to
// every peer in PeerInfo). A request names a board (communicator hash, rank, ranks); the answer is
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

// This process's board server, started on first use; an address with family AF_UNSPEC (invalid)
// when hang reports are off (BRAID_HANG_REPORT_MS or BRAID_PEER_WATCH_MS 0) or it could not start (said once, at INFO:
// reports then say "not known" for this process's ranks, nothing else changes).
SocketAddress boardServerAddress();

// A copy of another process's board.
struct FetchedBoard {
  std::vector<uint64_t> words;  // the board and the per-peer counts after it (progressBoardBytes)
  int64_t clockOffsetNs = 0;    // add to the board's CLOCK_MONOTONIC times to get this host's
  const ProgressBoard* board() const { return reinterpret_cast<const ProgressBoard*>(words.data()); }
};

// Asks the server at `server` for rank's board of the communicator (commHash, nRanks). False when
// there is no answer before `deadline` (the socket layer WARNs why: refused, unreachable, timed
// out), the server has no such board, or the answer is not a board of that rank: the caller
// reports the rank as not known.
bool fetchBoard(const SocketAddress& server, uint64_t commHash, int rank, int nRanks, const Deadline& deadline,
                FetchedBoard* out);

}  // namespace braid::watch
