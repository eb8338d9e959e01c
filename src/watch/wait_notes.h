// Hang diagnosis, what the kernels' long-wait notes say (device/dev_types.h, DevWaitNotes): a
// collective kernel notes nothing on its fast path; a CTA that has waited long notes, at every later
// read of the abort flag, which op it waits in and a fresh beat. A board keeps two sets of notes:
// eager collectives (op = the launch's seq, progress_board.h) and collectives replayed from CUDA
// graphs (op = the graph op the GPU counted, graph_progress.h). Beats that move between two looks
// mean "waiting now".
#pragma once

#include <cstdint>

#include "device/dev_types.h"

namespace braid::watch {

// A word another process or a GPU writes.
inline uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// The beats of a board's CTAs at one look.
struct WaitBeats {
  uint64_t beat[kMaxChannels] = {};
};

// The op the CTAs of `notes` wait in now: those whose beat moved since `*beats` (which then holds
// this look's beats); the smallest op when they differ. 0 when none waits; *capture is what was
// noted with the op (a graph op's capture number). Read with atomic loads: a GPU writes them.
uint64_t opWaitingNow(const DevWaitNotes& notes, WaitBeats* beats, uint64_t* capture);

// The watch's memory of one set of notes: the beats of its last look, the op it has seen waiting
// since when, and the last op it reported.
struct WaitWatch {
  WaitBeats beats;
  uint64_t seen = 0;
  int64_t seenNs = 0;
  uint64_t reported = 0;
};

// Called at every check: true when the same op has been seen waiting at every check for thresholdNs
// or more and was not reported yet; *op, *capture and *sinceNs (when first seen) say which.
bool waitReportDue(const DevWaitNotes& notes, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs, uint64_t* op,
                   uint64_t* capture, int64_t* sinceNs);

}  // namespace braid::watch
