// Point-to-point planning, pure host logic shared by the launch and ncclGroupSimulateEnd: how many
// channels a peer's connections have, how an operation is split over them, and what a group of
// sends and receives is estimated to cost.
//
// Both ends of a connection must split an operation identically: everything here depends only on
// values every rank has (the operation's size, the parameters, the communicator's size and the
// smallest GPU among its ranks), never on the rest of one rank's group.
#pragma once

#include <cstdint>
#include <vector>

namespace braid::plan {

// Channels per peer: `wanted` (NCCL_MAX_P2P_NCHANNELS, clamped to 1..maxChannels), fewer where a group
// with every peer in both directions would need more CTAs than `residentCtas` (the smallest
// multiprocessor count among the ranks, and at most what one kernel launch describes). Each (peer,
// direction, channel) is one CTA that may wait for its partner CTA on the peer, so all of them must
// be resident at once, or two ranks whose waiting CTAs fill their GPUs deadlock.
int p2pChannelsPerPeer(int64_t wanted, int maxChannels, int nranks, int residentCtas);

// Self copies beside peer traffic run in the kernel, on up to this many CTAs without a connection
// placed last in the grid, each copying its part of every self pair while the other CTAs move the
// peers' data. An all-to-all's own block would otherwise hold the transfers back: as a copy before
// the kernel it cost 2 H200 7% at 1 GiB, on a side stream (the copy engine, beside the kernel) 13%.
// These CTAs wait for nobody, so they need not be resident with the others, but they take places
// in the launch's work list.
constexpr int kP2pSelfCopyCtas = 8;

// An operation takes one channel per kP2pBytesPerChannel bytes (at least one), up to channelsPerPeer.
// 32 KiB: a CTA moves about 20 GB/s, so a 128 KiB message on one CTA took 5 us longer than on four
// (2 H200, all-to-all at 256 KiB: 13.7 us with 128 KiB per channel, 8.5-8.7 us with 32 KiB, NVIDIA
// NCCL 8.3-10.4 us). 16 KiB was no faster.
constexpr uint64_t kP2pBytesPerChannel = 32 << 10;
int p2pChannelsFor(uint64_t bytes, int channelsPerPeer);

// Channel `channel`'s part of an operation of `bytes` split over nChannels: 16-byte-multiple shares
// in channel order; trailing channels may get nothing.
struct P2pPart {
  uint64_t offset;
  uint64_t bytes;
};
P2pPart p2pPart(uint64_t bytes, int channel, int nChannels);

// Balanced operations (device/prims/p2p_balanced.h): the CTAs of a peer's channels take chunks of
// the operation as they go. At most kP2pBalancedOpsPerPeer operations per peer and direction in one
// launch are balanced (each has its own counter), the first ones of the queue.
constexpr int kP2pBalancedOpsPerPeer = 4;
// A group whose work list does not fit one kernel runs in rounds, one kernel each: round r moves
// operations r * kP2pOpsPerRound to (r + 1) * kP2pOpsPerRound - 1 of every (peer, direction) queue.
// Every balanced operation is in round 0, and a round's segments (at most this many per CTA) always
// fit the large work list (device/dev_types.h, DevP2pArgsLarge: 128 CTAs, 896 segments).
constexpr int kP2pOpsPerRound = 4;
static_assert(kP2pOpsPerRound >= kP2pBalancedOpsPerPeer, "balanced operations run in the first round");
// The chunk of a balanced operation of `bytes` on `channels` channels: `chunkBytes` in whole pages
// (DevP2pSeg's unit: at least one, at most the slot and what 16 bits of pages hold). 0: the
// operation is not balanced (below minBytes, minBytes 0, or a single channel).
uint64_t p2pBalancedChunk(uint64_t bytes, int channels, uint64_t slotBytes, int64_t minBytes, int64_t chunkBytes);

// One queued send or receive as the estimate sees it.
struct P2pOpModel {
  int peer;
  bool send;
  uint64_t bytes;
  bool self;              // the peer is the rank itself: a device copy, counted once, on its send
  bool nvlink;            // the pair is linked by NVLink (else PCIe or host memory, far slower)
  bool balanced = false;  // its CTAs take chunks as they go (p2pBalancedChunk): a pair's faster rate
};

// Estimated time in microseconds of one rank's sends and receives of one group, launched as one
// kernel: a fixed launch cost, then the busiest of (each peer and direction's bytes at its
// channels' rate; all sends at the GPU's egress rate and all receives at its ingress rate, when
// they involve several peers; the self copies at the device copy rate). Fitted on 4 H200
// (docs/performance-log.md, 2026-11-23): 6 us for small exchanges, ~330 GB/s for one pair, ~290
// GB/s per GPU for all-to-all; a balanced operation ~360 GB/s for one pair (2 H200, 2026-11-22). A
// group too large for one kernel pays the fixed cost once per round. 0 for an empty list.
double estimateP2pUs(const std::vector<P2pOpModel>& ops, int channelsPerPeer);

// Peers a GPU must move data with at once, on channelsPerPeer channels each, for their channels'
// rate to reach its NVLink port rate (at least 1): the fewest rounds a batch of staged sends
// (plan/p2p_stage.h) should hold. 8 H200 (9 channels per peer): 2; 2 or 4: 1.
int p2pPortPeers(int channelsPerPeer);
// Estimated time in microseconds of copying `bytes` within one GPU before a kernel (staging).
double estimateStageCopyUs(uint64_t bytes);

}  // namespace braid::plan
