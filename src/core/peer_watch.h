// Dead peers on one host. A process-wide thread looks, every BRAID_PEER_WATCH_MS, at each ready
// communicator with work in flight, at its peers whose pids it can see (same kernel boot and pid
// namespace, PeerInfo's pidSpace), and marks it when a peer process is gone: ncclCommGetAsyncError then
// reports ncclRemoteError, one WARN names the rank, its pid and GPU, and new operations are
// refused with that error (they would wait for it forever). ncclCommAbort, ncclCommDestroy and
// ncclCommShrink with NCCL_SHRINK_ABORT still work: none of them waits for a dead peer. Peers on
// other hosts or in other pid namespaces are not watched. The same thread makes the hang reports
// (core/hang_watch.h), first, since they need no CUDA call and the dead-peer check may make one,
// and it tells each proxy when the launches it serves have ended (util/launch_counts.h).
#pragma once

#include <vector>

#include "core/peer_info.h"

struct ncclComm;

namespace braid {

// No such process, or a zombie (exited, not yet reaped by its parent).
bool processGone(int pid);

// The first rank other than `self` whose process shares self's pid space and is gone; -1 if none.
int firstDeadPeer(const std::vector<PeerInfo>& peers, int self);

// Marks `comm` if one of its peer processes on this host is gone (ncclRemoteError as its
// asynchronous error, one WARN naming the rank), unless it has an error already. True when comm has
// a dead peer (marked now). The watch calls it for communicators with work in flight; finalize and
// destroy while they wait for that work (they must not wait for a dead peer, and destroy takes the
// communicator out of the watch's sight first).
bool markIfPeerDied(ncclComm* comm);

// Starts the watching thread once per process (no-op when BRAID_PEER_WATCH_MS is 0).
void startPeerWatch();

}  // namespace braid
