#include "core/progress_board.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace braid {
namespace {

bool left(const ProgressBoard& board, const OpRecord& op) {
  const int ctas = op.nChannels < 1 ? 1 : (op.nChannels > kMaxChannels ? kMaxChannels : op.nChannels);
  for (int b = 0; b < ctas; b++) {
    if (loadAcquire(&board.dev.ctaDone[b]) < op.seq) return false;
  }
  return true;
}

}  // namespace

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

void noteLaunch(ProgressBoard* board, const OpRecord& op) {
  board->recent[op.seq % kRecentOps] = op;
  __atomic_store_n(&board->launched, op.seq, __ATOMIC_RELEASE);
}

uint64_t launchedThrough(const ProgressBoard& board) { return loadAcquire(&board.launched); }

bool recordOf(const ProgressBoard& board, uint64_t seq, OpRecord* out) {
  if (seq == 0 || seq > launchedThrough(board)) return false;
  *out = board.recent[seq % kRecentOps];
  // A launch kRecentOps later may have reused the slot meanwhile; its number then differs.
  return out->seq == seq;
}

// Operations run one after another on a communicator (the next kernel begins after the previous
// one ended), so every operation before the last one begun is complete.
uint64_t completedThrough(const ProgressBoard& board) {
  const uint64_t started = loadAcquire(&board.dev.started);
  OpRecord op{};
  if (started == 0 || !recordOf(board, started, &op)) return started == 0 ? 0 : started - 1;
  return left(board, op) ? started : started - 1;
}

RankProgress progressOf(const ProgressBoard* board, uint64_t seq) {
  RankProgress p;
  if (board == nullptr || board->magic != kProgressBoardMagic) return p;
  p.launched = launchedThrough(*board);
  OpRecord last{};
  if (recordOf(*board, p.launched, &last)) p.lastLaunchNs = last.launchNs;
  if (p.launched < seq) {
    p.where = RankProgress::Where::kNotLaunched;
  } else if (completedThrough(*board) >= seq) {
    p.where = RankProgress::Where::kDone;
  } else if (loadAcquire(&board->dev.started) >= seq) {
    p.where = RankProgress::Where::kRunning;
  } else {
    p.where = RankProgress::Where::kQueued;
  }
  return p;
}

}  // namespace braid
