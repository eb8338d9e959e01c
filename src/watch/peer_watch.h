// The watch thread: one per process, started by the first communicator watch (comm_watch.h) when
// BRAID_PEER_WATCH_MS is not 0. Every BRAID_PEER_WATCH_MS it visits each started watch, which
// makes its hang reports (hang_watch.h) first, since they need no CUDA call and the rest may make
// one; notes on its progress board which collectives have completed; tells its proxy when the
// launches it serves have ended (util/launch_counts.h); and, while work is in flight, looks at its
// peers whose pids this process can see (same kernel boot and pid namespace: PeerProcess's
// pidSpace). A peer process that is gone marks the communicator: ncclCommGetAsyncError then reports
// ncclRemoteError, one WARN names the rank, its pid and GPU, and new operations are refused with
// that error (they would wait for it forever). ncclCommAbort, ncclCommDestroy and ncclCommShrink
// with NCCL_SHRINK_ABORT still work: none of them waits for a dead peer. Peers on other hosts or in
// other pid namespaces are not watched.
#pragma once

#include <functional>
#include <vector>

#include "watch/peer_process.h"

namespace braid::watch {

class CommWatch;

// No such process, or a zombie (exited, not yet reaped by its parent).
bool processGone(int pid);

// The first rank other than `self` whose process shares self's pid space and is gone; -1 if none.
int firstDeadPeer(const std::vector<PeerProcess>& peers, int self);

// The set of watches the thread visits. Once removeWatched returns, the thread is not visiting
// `watch` and will not (it waits for a visit in progress: a check takes microseconds, a hang
// report 50 ms, up to 2 s per look at another host), so the watch may be torn down.
void addWatched(CommWatch* watch);
void removeWatched(const CommWatch* watch);
// Returns once the thread is not visiting `watch` (it stays in the set).
void waitOutVisit(const CommWatch* watch);

// Calls fn on every watch of the set in turn (one thread at a time may do this: the watch thread).
// The set is not locked while fn runs, so fn may take its time while watches are added and removed;
// removing the watch fn is visiting waits for fn to return. fn must not remove watches.
void forEachWatched(const std::function<void(CommWatch*)>& fn);

// Starts the thread (once per process; never with BRAID_PEER_WATCH_MS 0).
void startWatchThread();

}  // namespace braid::watch
