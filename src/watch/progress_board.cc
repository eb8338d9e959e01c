#include "watch/progress_board.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace braid::watch {

std::string progressBoardName(uint64_t commHash, int rank, int pid) {
  char name[96];
  std::snprintf(name, sizeof(name), "/braid-progress-%016" PRIx64 "-%d-%d", commHash, rank, pid);
  return name;
}

size_t progressBoardBytes(int nRanks) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = sizeof(ProgressBoard) + 2 * sizeof(uint64_t) * static_cast<size_t>(nRanks < 0 ? 0 : nRanks);
  return (bytes + page - 1) / page * page;
}

int64_t monotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

void noteLaunch(ProgressBoard* board, const OpRecord& op) { putRecord(board->recent, &board->launched, op); }

void noteRecorded(ProgressBoard* board, uint64_t seq) { __atomic_store_n(&board->recorded, seq, __ATOMIC_RELEASE); }

void noteCompleted(ProgressBoard* board, uint64_t seq) {
  if (seq > loadAcquire(&board->completed)) __atomic_store_n(&board->completed, seq, __ATOMIC_RELEASE);
}

uint64_t launchedThrough(const ProgressBoard& board) { return loadAcquire(&board.launched); }
uint64_t recordedThrough(const ProgressBoard& board) { return loadAcquire(&board.recorded); }
uint64_t completedThrough(const ProgressBoard& board) { return loadAcquire(&board.completed); }

bool recordOf(const ProgressBoard& board, uint64_t seq, OpRecord* out) {
  return getRecord(board.recent, &board.launched, seq, out);
}

RankProgress progressOf(const ProgressBoard* board, uint64_t seq, uint64_t waitingOp) {
  RankProgress p;
  if (board == nullptr || board->magic != kProgressBoardMagic) return p;
  p.launched = launchedThrough(*board);
  p.waitingOp = waitingOp;
  OpRecord last{};
  if (recordOf(*board, p.launched, &last)) p.lastLaunchNs = last.launchNs;
  using Where = RankProgress::Where;
  if (p.launched < seq) {
    p.where = Where::kNotLaunched;
  } else if (waitingOp == seq) {
    p.where = Where::kWaitingInIt;
  } else if (waitingOp > seq || completedThrough(*board) >= seq) {
    p.where = Where::kDone;  // a communicator's kernels run one after another
  } else {
    p.where = waitingOp != 0 ? Where::kWaitingElsewhere : Where::kNotWaiting;
  }
  return p;
}

}  // namespace braid::watch
