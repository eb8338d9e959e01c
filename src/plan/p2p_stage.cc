#include "plan/p2p_stage.h"

#include <algorithm>
#include <numeric>

#include "plan/p2p_plan.h"

namespace braid::plan {

// The circle method: with an odd count m of ranks, round s pairs a with b where a + b = s (mod m),
// and the rank with 2a = s sits out. With an even count, ranks 0..n-2 do that over m = n - 1 and
// the rank that would sit out is paired with rank n - 1 instead.
int pairRounds(int nranks) {
  if (nranks < 2) return 0;
  return nranks % 2 == 0 ? nranks - 1 : nranks;
}

int pairRound(int rank, int peer, int nranks) {
  if (nranks % 2 != 0) return (rank + peer) % nranks;
  const int m = nranks - 1;
  if (rank == m) return (2 * peer) % m;
  if (peer == m) return (2 * rank) % m;
  return (rank + peer) % m;
}

int pairPartner(int rank, int round, int nranks) {
  if (nranks < 2) return rank;
  if (nranks % 2 != 0) return ((round - rank) % nranks + nranks) % nranks;
  const int m = nranks - 1;
  if (rank == m) {
    // The a with 2a = round (mod m): m is odd, so 2 has the inverse (m + 1) / 2.
    return static_cast<int>(static_cast<int64_t>(round) * ((m + 1) / 2) % m);
  }
  const int peer = ((round - rank) % m + m) % m;
  return peer == rank ? m : peer;
}

StagePlan planStageBatches(int rank, int nranks, const std::vector<uint64_t>& stagedBytes, uint64_t budgetBytes,
                           int minRounds, bool oneBatch) {
  StagePlan plan;
  uint64_t total = 0;
  for (int p = 0; p < nranks && p < static_cast<int>(stagedBytes.size()); p++) {
    if (p != rank) total += stagedBytes[p];
  }
  if (total == 0) return plan;
  plan.batchOfPeer.assign(static_cast<size_t>(nranks), 0);
  if (oneBatch || total <= budgetBytes) {
    plan.batchBytes.push_back(total);
    return plan;
  }
  const uint64_t half = budgetBytes / 2;
  const int rounds = pairRounds(nranks);
  int roundsInBatch = 0;
  for (int s = 0; s < rounds; s++) {
    const int peer = pairPartner(rank, s, nranks);
    const uint64_t bytes = peer != rank && peer < static_cast<int>(stagedBytes.size()) ? stagedBytes[peer] : 0;
    // A round that stages nothing (no partner, or nothing staged to it) never opens a batch.
    const bool full = bytes > 0 && !plan.batchBytes.empty() && plan.batchBytes.back() + bytes > half;
    if (plan.batchBytes.empty() || (full && roundsInBatch >= std::max(minRounds, 1))) {
      plan.batchBytes.push_back(0);
      roundsInBatch = 0;
    }
    plan.batchBytes.back() += bytes;
    if (bytes > 0) roundsInBatch++;
    if (peer != rank) plan.batchOfPeer[static_cast<size_t>(peer)] = plan.batches() - 1;
  }
  return plan;
}

uint64_t planStageCopies(const std::vector<StageRange>& ranges, std::vector<StageCopy>* copies,
                         std::vector<uint64_t>* offsets) {
  copies->clear();
  offsets->assign(ranges.size(), 0);
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a].addr < ranges[b].addr; });
  uint64_t used = 0;
  uint64_t lastAllocation = 0;
  for (size_t i : order) {
    const StageRange& r = ranges[i];
    if (r.bytes == 0) continue;
    if (!copies->empty()) {
      StageCopy& last = copies->back();
      const uint64_t lastEnd = last.src + last.bytes;
      if (r.allocation != 0 && r.allocation == lastAllocation && r.addr <= lastEnd + kStageGapBytes) {
        // Joins the previous copy (overlapping or close): the gap is copied too.
        (*offsets)[i] = last.dstOffset + (r.addr - last.src);
        last.bytes = std::max(lastEnd, r.addr + r.bytes) - last.src;
        used = last.dstOffset + last.bytes;
        continue;
      }
    }
    const uint64_t start = (used + kStageAlign - 1) / kStageAlign * kStageAlign;
    copies->push_back(StageCopy{r.addr, start, r.bytes});
    lastAllocation = r.allocation;
    (*offsets)[i] = start;
    used = start + r.bytes;
  }
  return used;
}

bool guardFits(uint64_t bytes, int channels, uint64_t fifoBytes) {
  return channels >= 1 && p2pPart(bytes, 0, channels).bytes <= fifoBytes;  // part 0 is the largest
}

}  // namespace braid::plan
