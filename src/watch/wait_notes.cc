#include "watch/wait_notes.h"

namespace braid::watch {

uint64_t opWaitingNow(const DevWaitNotes& notes, WaitBeats* beats, uint64_t* capture) {
  uint64_t waiting = 0;
  for (int b = 0; b < kMaxChannels; b++) {
    const uint64_t beat = loadAcquire(&notes.beat[b]);
    if (beat == beats->beat[b]) continue;
    beats->beat[b] = beat;
    // The op and capture were noted with this beat or just after it: a look that catches them
    // half-written is one look; only what lasts is reported.
    const uint64_t op = loadAcquire(&notes.op[b]);
    if (op != 0 && (waiting == 0 || op < waiting)) {
      waiting = op;
      *capture = loadAcquire(&notes.capture[b]);
    }
  }
  return waiting;
}

bool waitReportDue(const DevWaitNotes& notes, WaitWatch* watch, int64_t nowNs, int64_t thresholdNs, uint64_t* op,
                   uint64_t* capture, int64_t* sinceNs) {
  uint64_t noted = 0;
  const uint64_t waiting = opWaitingNow(notes, &watch->beats, &noted);
  if (waiting != watch->seen) {  // a new wait, or none: its clock starts now
    watch->seen = waiting;
    watch->seenNs = nowNs;
    return false;
  }
  if (waiting == 0 || waiting <= watch->reported || nowNs - watch->seenNs < thresholdNs) return false;
  watch->reported = waiting;
  *op = waiting;
  *capture = noted;
  *sinceNs = watch->seenNs;
  return true;
}

}  // namespace braid::watch
