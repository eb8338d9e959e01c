// Progress boards for host-side tests: zeroed, with their per-peer counts, in ordinary memory.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "util/shm_segment.h"
#include "watch/peer_process.h"
#include "watch/progress_board.h"

namespace braid::watch::testutil {

struct TestBoard {
  std::unique_ptr<uint64_t[]> words;
  ProgressBoard* get() const { return reinterpret_cast<ProgressBoard*>(words.get()); }
  ProgressBoard& operator*() const { return *get(); }
  ProgressBoard* operator->() const { return get(); }
};

// The board of `rank` in a communicator of nRanks.
inline TestBoard emptyBoard(int nRanks = 0, int rank = 0) {
  TestBoard b{std::make_unique<uint64_t[]>(progressBoardBytes(nRanks) / sizeof(uint64_t))};
  b->magic = kProgressBoardMagic;
  b->nRanks = nRanks;
  b->rank = rank;
  return b;
}

// Boards of ranks 1 and 2 of a communicator of nRanks in shared memory, as their processes make
// them (this process plays both), under a hash of the test's own (hashTop, this pid, a random byte),
// and every rank's PeerProcess: one pid, all on this host but rank 3 (another pid space).
struct SharedBoards {
  uint64_t hash = 0;
  std::vector<ShmSegment> segments;
  std::vector<ProgressBoard*> boards;  // [1] and [2]
  std::vector<PeerProcess> peers;
};
inline bool makeSharedBoards(uint64_t hashTop, int nRanks, SharedBoards* out) {
  const int pid = static_cast<int>(::getpid());
  out->hash = hashTop | static_cast<uint64_t>(pid) << 8 | (std::rand() & 0xff);
  out->segments.resize(3);
  out->boards.assign(3, nullptr);
  for (int r = 1; r <= 2; r++) {
    if (ShmSegment::create(progressBoardName(out->hash, r, pid), progressBoardBytes(nRanks), "test",
                           &out->segments[r]) != ncclSuccess) {
      return false;
    }
    out->boards[r] = static_cast<ProgressBoard*>(out->segments[r].ptr());
    out->boards[r]->magic = kProgressBoardMagic;
    out->boards[r]->nRanks = nRanks;
  }
  out->peers.assign(nRanks, PeerProcess{});
  for (int r = 0; r < nRanks; r++) {
    out->peers[r].pid = pid;
    out->peers[r].pidSpace = r == 3 ? 77 : 42;
  }
  return true;
}

}  // namespace braid::watch::testutil
