// Hang diagnosis of collectives captured in CUDA graphs. A replay runs its kernels without any of
// Braid's host code, so the host cannot number them as it numbers eager launches
// (progress_board.h), and the kernels must not store to host memory on their fast path (it would
// cost each ~0.9 us; device/dev_types.h, DevWaitNotes). Instead:
//   - at capture, the host numbers each captured collective (its capture number) and notes what it
//     is in the board's `captures`;
//   - at replay, the GPU numbers the captured kernels of the communicator as they begin (graph op
//     1, 2, ...), and a CTA that has waited long notes in `graphWaits`, at every later read of the
//     abort flag, which graph op and capture it waits in, with a fresh beat (watch/wait_notes.h).
// Every rank must replay its graphs in the same order, so graph op n is the same operation on every
// rank: a rank whose CTAs wait in op n is in it; one that waits in none has not begun it (not
// replayed as often, or stuck before it) or is done with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "watch/progress_board.h"
#include "watch/wait_notes.h"

namespace braid::watch {

// Owner side, at capture: gives `op` the next capture number (its seq), notes it and returns it.
uint64_t noteCapture(ProgressBoard* board, OpRecord op);

// Reader side. What a GPU or another process writes is read with atomic loads.
// Capture c as noted, or false when a later capture has reused its slot (or there is none).
bool captureRecordOf(const ProgressBoard& board, uint64_t capture, OpRecord* out);

// Where one rank is with graph op n.
struct GraphRankProgress {
  enum class Where {
    kUnknown,           // no board to read (another host, or it could not be opened)
    kNotWaiting,        // no CTA of it waits in a graph op: it has not begun op n, or is done with it
    kWaitingInIt,       // its CTAs wait in op n
    kWaitingElsewhere,  // its CTAs wait in another graph op (`op`)
  };
  Where where = Where::kUnknown;
  uint64_t op = 0;
};
GraphRankProgress graphProgressFrom(uint64_t waitingOp, uint64_t op);

// The report of graph op `op` of rank `self`, waiting for at least `stuckSeconds`. `capture` is its
// capture record (null when no longer noted), ranks[r] rank r's progress with it.
std::string graphHangReport(uint64_t op, const OpRecord* capture, double stuckSeconds, int self,
                            const std::vector<GraphRankProgress>& ranks);

}  // namespace braid::watch
