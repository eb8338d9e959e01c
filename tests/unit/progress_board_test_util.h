// Progress boards for host-side tests: zeroed, with their per-peer counts, in ordinary memory.
#pragma once

#include <cstdint>
#include <memory>

#include "core/progress_board.h"

namespace braid::testutil {

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

}  // namespace braid::testutil
