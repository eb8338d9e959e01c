// Hang diagnosis, the record: how far a rank has got with its collectives, where every process of
// the host can read it with plain loads (no CUDA call, so it works while a GPU is stuck).
//
// A rank's board is a POSIX shared memory segment, one per communicator with a data path:
//   - the host notes each collective kernel it launches: the sequence number (1, 2, ... per
//     communicator), what the operation is, and when (CLOCK_MONOTONIC, one clock for the host);
//   - the kernels note in `eagerWaits` (a cudaHostRegister mapping of the same pages) only their
//     long waits: which operation each waiting CTA is in, with a fresh beat (watch/wait_notes.h).
//     Nothing on their fast path: a store to host memory costs a kernel ~0.9 us;
//   - so the host notes which launch the communicator's last-launch event was recorded after, and
//     the watch thread (watch/peer_watch.cc), when that event has completed, notes that every launch
//     up to it has (`completed`: late while the rank keeps launching, exact once it stops).
// Every rank launches a communicator's collectives in the same order, so the numbers agree across
// ranks: another rank's board says whether it has launched operation n, and whether its GPU waits
// in it now.
// Point-to-point kernels are numbered on their own (their order differs from rank to rank); what
// matches across ranks there is the count of sends from a rank to a peer and of receives the peer
// posted from it, which the board keeps for every peer (watch/p2p_progress.h). Their kernels note
// only their long waits too (`p2pWaits`, op = the point-to-point launch's number).
// Collectives captured in a CUDA graph are followed apart (watch/graph_progress.h): the host notes
// each capture, and the GPU notes the graph ops replays run when they wait long. Point-to-point
// kernels captured in a graph likewise: the host numbers and notes each capture (`p2pCaptures`), a
// replay that waits long notes its capture number (`p2pGraphWaits`). Not followed: communicators of
// one rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "device/dev_types.h"
#include "watch/wait_notes.h"

namespace braid::watch {

constexpr uint64_t kProgressBoardMagic = 0x4252414944505236ull;  // "BRAIDPR6"
constexpr int kRecentOps = 256;                                  // launches a board describes
constexpr int kRecentP2pLaunches = 64;                           // point-to-point launches a board describes
constexpr int kP2pOpsNoted = 8;                                  // operations noted per point-to-point launch
constexpr int kCapturesNoted = 1024;                             // captured collectives a board describes
constexpr int kP2pCapturesNoted = 64;                            // captured point-to-point launches a board describes

// One launched collective.
struct OpRecord {
  uint64_t seq;       // 0: empty slot
  uint64_t count;     // the call's count
  int64_t launchNs;   // CLOCK_MONOTONIC
  int32_t nChannels;  // CTAs of its kernel
  int32_t root;       // Broadcast and Reduce
  uint8_t coll;       // CollId
  uint8_t dtype;      // ncclDataType_t
  uint8_t userOp;     // 1: a ncclRedOpCreatePreMulSum op
  int8_t op;          // ncclRedOp_t of a built-in op
  uint32_t pad;
};

// One send or receive of a point-to-point launch: the index-th (1, 2, ...) this rank posted to or
// from peer, of `bytes` (index 0 in a captured launch: a replay is not counted).
struct P2pOpNote {
  uint64_t index;
  uint64_t bytes;
  int32_t peer;
  int32_t isSend;
};

// One launched (or captured) point-to-point kernel (a group's sends and receives on this
// communicator); seq is its launch (or capture) number.
struct P2pRecord {
  uint64_t seq;      // 0: empty slot
  int64_t launchNs;  // CLOCK_MONOTONIC
  int32_t nCtas;     // CTAs of its kernel
  int32_t nOps;      // its sends and receives (the first kP2pOpsNoted are in ops)
  P2pOpNote ops[kP2pOpsNoted];
};

struct ProgressBoard {
  uint64_t magic;
  int32_t rank;
  int32_t pid;
  int32_t nRanks;  // length of the per-peer counts after the struct (p2pPosted)
  int32_t pad;
  uint64_t launched;            // seq of the last launch noted; stored after its record
  uint64_t recorded;            // seq of the last launch the last-launch event was recorded after
  uint64_t completed;           // every launch up to this one has completed (written by the watch)
  OpRecord recent[kRecentOps];  // the launch of seq n is in recent[n % kRecentOps]
  DevWaitNotes eagerWaits;      // written by this rank's kernels when they wait long
  uint64_t p2pLaunched;         // the same for point-to-point kernels
  P2pRecord recentP2p[kRecentP2pLaunches];
  DevWaitNotes p2pWaits;                     // written by this rank's point-to-point kernels when they wait long
  uint64_t captured;                         // capture number of the last collective captured in a graph
  OpRecord captures[kCapturesNoted];         // capture c in captures[c % kCapturesNoted] (its seq is c)
  DevWaitNotes graphWaits;                   // written by this rank's captured kernels when they wait long
  uint64_t p2pCaptured;                      // capture number of the last point-to-point launch captured
  P2pRecord p2pCaptures[kP2pCapturesNoted];  // capture c in p2pCaptures[c % kP2pCapturesNoted]
  DevWaitNotes p2pGraphWaits;                // written by replays of them when they wait long
  // Followed by uint64_t posted[2 * nRanks] (p2pPosted): sends posted to each peer, then receives
  // posted from each peer, counted at launch.
};

// "/braid-progress-<commHash hex>-<rank>-<pid>": rank's board of one communicator.
std::string progressBoardName(uint64_t commHash, int rank, int pid);

// Bytes of a board's segment for a communicator of nRanks: whole pages (the owner and the readers
// compute the same).
size_t progressBoardBytes(int nRanks);

// The per-peer counts after the board: [peer] sends to peer, [nRanks + peer] receives from it.
inline uint64_t* p2pPosted(ProgressBoard* board) { return reinterpret_cast<uint64_t*>(board + 1); }
inline const uint64_t* p2pPosted(const ProgressBoard* board) { return reinterpret_cast<const uint64_t*>(board + 1); }

// Monotonic nanoseconds (CLOCK_MONOTONIC), comparable between processes of a host.
int64_t monotonicNs();

// A board's record rings (recent launches, captures, point-to-point launches and captures): record
// n in ring[n % N], `last` the newest number.
// Owner side: stores `rec` (numbered rec.seq) in its slot, then publishes the number, so a reader
// that sees n finds n's record.
template <typename Record, size_t N>
void putRecord(Record (&ring)[N], uint64_t* last, const Record& rec) {
  ring[rec.seq % N] = rec;
  __atomic_store_n(last, rec.seq, __ATOMIC_RELEASE);
}
// Reader side: record n as noted, or false when there is none or a record N later has reused its
// slot (its number then differs).
template <typename Record, size_t N>
bool getRecord(const Record (&ring)[N], const uint64_t* last, uint64_t n, Record* out) {
  if (n == 0 || n > __atomic_load_n(last, __ATOMIC_ACQUIRE)) return false;
  *out = ring[n % N];
  return out->seq == n;
}

// Owner side: notes a launch (record first, then `launched`, so a reader that sees n finds n's record).
void noteLaunch(ProgressBoard* board, const OpRecord& op);

// Owner side: the communicator's last-launch event was just recorded after launch `seq`.
void noteRecorded(ProgressBoard* board, uint64_t seq);
// The watch, once that event has completed: every launch up to `seq` has (never lowers it).
void noteCompleted(ProgressBoard* board, uint64_t seq);

// Reader side. Values another process (or a GPU) writes are read with atomic loads.
uint64_t launchedThrough(const ProgressBoard& board);
uint64_t recordedThrough(const ProgressBoard& board);
uint64_t completedThrough(const ProgressBoard& board);
// Operation seq's record as noted, or false when it is older than the last kRecentOps launches.
bool recordOf(const ProgressBoard& board, uint64_t seq, OpRecord* out);

// Where one rank is with respect to operation seq.
struct RankProgress {
  enum class Where {
    kUnknown,           // no board to read (gone, or its host's board server did not answer)
    kNotLaunched,       // this rank has not launched it: its code has not called it, or is stuck before it
    kWaitingInIt,       // its CTAs wait in it
    kWaitingElsewhere,  // its CTAs wait in an earlier collective (waitingOp)
    kDone,              // it completed (completedThrough, or its CTAs wait in a later collective)
    kNotWaiting,        // launched it, no CTA waits in a collective, not seen done: its GPU has not
                        // begun it (earlier work on its stream is not done), or it has just ended
  };
  Where where = Where::kUnknown;
  uint64_t launched = 0;     // its last launch
  int64_t lastLaunchNs = 0;  // when (0 when unknown)
  uint64_t waitingOp = 0;    // the collective its CTAs wait in (0: none)
};
// From the board and the collective its CTAs wait in now (opWaitingNow over two looks at
// eagerWaits; 0: none).
RankProgress progressOf(const ProgressBoard* board, uint64_t seq, uint64_t waitingOp);

}  // namespace braid::watch
