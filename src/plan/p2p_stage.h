// Staged sends, pure host logic: how an in-place AlltoAll (sendbuff == recvbuff) is scheduled so
// that every block is read before it is overwritten, in bounded memory.
//
// Block p of an in-place AlltoAll's buffer is sent to rank p and overwritten by the block rank p
// sends back; the receive may write a part of it before the send has read that part. So each such
// send is "staged": copied into communicator memory before the kernel that moves it, and sent from
// there. The peer sees the same operations as from an out-of-place AlltoAll, so ranks may choose in
// place or not independently.
//
// Memory: a rank whose staged bytes exceed the stage budget (BRAID_P2P_STAGE_BYTES) moves its peers
// in several kernels, "batches", each staging only its own peers' blocks. Peers are visited in the
// rounds of a 1-factorization of the ranks (round-robin tournament): in round s every rank has one
// partner (or none), and pairRound(a, b) == pairRound(b, a). A batch is a run of consecutive
// rounds, and batches run in round order. Why that cannot deadlock, whatever runs each rank chose
// (they may differ between ranks; a rank that stages nothing is one batch of every round): let s be
// the earliest round with an unfinished pair. Every kernel made only of earlier rounds has finished,
// so both ranks of a round-s pair are running the kernel that holds their operations with each other,
// whose CTAs are all resident: those operations complete, and by induction every one does. That
// needs each pair's operations in one kernel on each side, so a group that runs in rounds of
// operations (a queue longer than kP2pOpsPerRound) is staged in one batch.
//
// The next batch's copies run inside the current batch's kernel (on its self-copy CTAs, beside the
// transfers): they read blocks no earlier batch writes and fill the other half of the memory. Only
// the first batch's copies run before a kernel.
#pragma once

#include <cstdint>
#include <vector>

namespace braid::plan {

// Rounds of the pairing of nranks ranks: nranks - 1 when even, nranks when odd (each rank sits one
// out), 0 for one rank.
int pairRounds(int nranks);
// The round in which rank and peer (rank != peer, both < nranks) are partners.
int pairRound(int rank, int peer, int nranks);
// Rank's partner in round s, or rank itself in the round it sits out.
int pairPartner(int rank, int round, int nranks);

// The batches of one rank's staged sends.
struct StagePlan {
  std::vector<int> batchOfPeer;      // per rank of the communicator (this rank's own entry: 0)
  std::vector<uint64_t> batchBytes;  // staged bytes of each batch (its peers' staged sends)
  int batches() const { return static_cast<int>(batchBytes.size()); }
};

// stagedBytes[p]: the bytes of this rank's staged sends to peer p (its own entry ignored). Empty
// plan when nothing is staged. One batch when the total is at most budgetBytes or oneBatch is set;
// otherwise batches of consecutive rounds holding at most budgetBytes / 2 each (two are staged at
// once), but staging to at least minRounds peers each (the last may stage to fewer), and at least one.
StagePlan planStageBatches(int rank, int nranks, const std::vector<uint64_t>& stagedBytes, uint64_t budgetBytes,
                           int minRounds, bool oneBatch);

// Whether an in-place send of `bytes` on `channels` channels may go unstaged, guarded by its
// receive (launch/p2p_stage.cc): each channel's part fits the channel's FIFO of fifoBytes, so the
// send finishes without its peer's receive and the receive that waits for it always starts.
bool guardFits(uint64_t bytes, int channels, uint64_t fifoBytes);

// One batch's copies into its memory. Sends whose source ranges lie within kStageGapBytes of each other
// in one allocation share one copy (an in-place AlltoAll's blocks are contiguous: usually one or two
// copies, around this rank's own block) and keep their distance in the memory; ranges of different
// allocations never share one, since one device copy must not span two allocations (or the unmapped
// space between them). Each copy starts kStageAlign-aligned.
constexpr uint64_t kStageGapBytes = 64 << 10;
constexpr uint64_t kStageAlign = 256;
struct StageRange {
  uint64_t addr;
  uint64_t bytes;
  uint64_t allocation;  // base address of the allocation holding it; 0: unknown (shares a copy with no other)
};
struct StageCopy {
  uint64_t src;        // address of the first byte copied
  uint64_t dstOffset;  // in the batch's memory
  uint64_t bytes;
};
// Fills *copies and *offsets (offsets[i]: where range i starts in the memory) and returns the bytes
// of memory the batch uses. Ranges of 0 bytes get offset 0 and no copy.
uint64_t planStageCopies(const std::vector<StageRange>& ranges, std::vector<StageCopy>* copies,
                         std::vector<uint64_t>* offsets);

}  // namespace braid::plan
