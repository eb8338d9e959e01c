// The constants of the planner's cost model and of its channel / thread / chunk choice, in one
// place. The cost model has NCCL's shape: per algorithm and protocol, a latency (a base plus a cost
// per hop) and a bus bandwidth (channels times a per-channel rate, scaled per protocol). Its
// numbers are fitted to braid-perf runs of Braid's own kernels on 4 H200 behind NVSwitch
// (scripts/experiments/tune-plans/2026-11-21-*.txt: AllReduce and AllGather with each protocol forced, 1 KiB to
// 64 MiB), the latencies refitted on 2 and 4 ranks on 2026-11-22 (2026-11-22-ll-channels.txt); the
// inter-node LL caps are still NCCL 2.28's Hopper values. Index [p] is a ProtoId: {LL, LL128,
// Simple}.
#pragma once

#include <cstdint>

#include "device/dev_types.h"

namespace braid::plan {

// ---- Cost model: time_us = latency + bytes / (1000 * algBwGBps) ----

// Fixed cost of one Ring operation (launch, setup, completion), by protocol. The per-hop part
// (latency = base + nsteps * hop) comes from topo (Topology::hopLatencyUs), by
// path type. LL128 refitted on 2 and 4 H200 (scripts/experiments/tune-plans/2026-11-22-ll-channels.txt):
// AllReduce 9.2 us on 2 ranks, 18.6 on 4; AllGather 6.9 on 2, 11.3-12.2 on 4.
constexpr double kRingBaseLatencyUs[kNumProtos] = {4.2, 4.8, 4.6};

// A ring takes at least base + nsteps * max(hop, kRingStepFloorUs), whatever its size: a Simple
// step's handshake costs more than topo's NVLink Simple hop (2.9 us, which chains and trees also
// use) but hides behind the data once steps are large. The Simple ring's floor on 2 and 4 H200 is
// AllGather 13.5 us (1 step) and 23.5 (3), AllReduce 18.5 (2) and 37-41 (6) from 32 KiB to 2 MiB,
// ~6.5 us a step (same plan file); large operations keep their bandwidth (AllReduce 1 GiB ~350
// GB/s). Slower hops (the network's 21 us) are above the floor: it changes nothing there.
constexpr double kRingStepFloorUs[kNumProtos] = {0.0, 0.0, 6.5};

// Bus bandwidth = nChannels * bwPerChannel, then per protocol: LL carries 8 data bytes in each
// 16-byte line (x0.5) and is capped for the whole operation (measured ~120 GB/s on one node);
// LL128 carries 120 of 128 bytes but its flag polling keeps it near 258 GB/s of the 371 the
// topology model gives 4 H200 (x0.70); Simple reaches ~340 (x0.92).
constexpr double kRingLlBwFactor = 0.5;
constexpr double kRingLl128BwFactor = 0.70;
constexpr double kRingSimpleBwFactor = 0.92;
constexpr double kLlMaxBusBwGBps[3] = {120.0, 45.0, 35.0};  // by node count: 1, 2, >= 3
constexpr double kRingLl128MaxBwPerChannelGBps = 36.7;

// Direct (LL, one hop): latency = kDirectBaseLatencyUs + kDirectPeerLatencyUs per peer past the
// first (at most kDirectPeersPriced) + topo's LL hop, plus kDirectReduceLatencyUs where the receivers reduce; bandwidth
// is the ring LL bus bandwidth times kDirect{Reduce,Copy}BwFactor, for the bytes of the rank's busiest port (nranks - 1
// connections). Fitted on 2 and 4 H200 (scripts/experiments/tune-plans/2026-11-22-ll-channels.txt and the protocol
// sweeps of docs/performance-log.md, 2026-11-22): at 16 KiB AllReduce 8.1 us on 2 ranks and 7.9 on 4, ReduceScatter 7.8
// and 7.6, AllGather 6.1 and 6.8; from there the busiest port takes 30-56 GB/s when it reduces and 45-90 when it
// copies. Ring LL took 14.5 us from 64 to 128 KiB on 4 ranks and AllGather / ReduceScatter 9.5 up to 128 KiB. The base
// is the ring LL's: replayed from CUDA graphs on 2 H200, where the host adds nothing, a Direct AllReduce (one hop, then
// the reduction) took 5.2-6.2 us from 8 B to 32 KiB and the two-hop ring LL 5.8-6.9, one ReduceScatter ring
// step 4.8-5.1 (tune-plans/2026-11-30-two-rank-algos.txt). Each peer past the first adds kDirectPeerLatencyUs (a CTA's
// items and polls grow with the peers) up to kDirectPeersPriced, which gives 4 ranks the 5.2 us base of the 2026-11-22
// fit; the flat 5.2 had kept the slower ring on 2 ranks. Larger communicators are not measured: they keep the 4-rank
// base.
constexpr double kDirectBaseLatencyUs = kRingBaseLatencyUs[kProtoLL];
constexpr double kDirectPeerLatencyUs = 0.5;
constexpr int kDirectPeersPriced = 2;
constexpr double kDirectReduceLatencyUs = 0.7;
constexpr double kDirectReduceBwFactor = 0.45;
constexpr double kDirectCopyBwFactor = 0.81;

// Rings and trees that cross hosts run LL on one channel: the proxy serves a rank's connections one
// after another, so every channel adds a network message to each step. 4 H200 as 2 hosts of 2 over
// loopback sockets (BRAID_NET_LL=1): ring LL AllReduce of 32 KiB took 249 us on the channels the
// node-local rule gave it (Simple on one channel: 85 us).
constexpr int kNetLlChannels = 1;

// ---- Threads per CTA ----

// Start value (the maximum) per protocol, and the bounds an NCCL_NTHREADS (LL, Simple) or
// NCCL_LL128_NTHREADS (LL128) value must respect: a multiple of 32 in [min, max].
constexpr int kDefaultThreads[kNumProtos] = {512, 640, 512};
constexpr int kMaxThreads[kNumProtos] = {512, 640, 512};
constexpr int kMinOverrideThreads[kNumProtos] = {64, 160, 64};
// Automatic halving of the thread count for small operations stops here.
constexpr int kMinAutoThreads = 128;
// Automatic growth of an LL / LL128 CTA on one host stops here (across hosts: kMaxThreads, not
// measured otherwise). 4 H200, AllReduce LL on 16 channels: 256 KiB 17.9 us with 256 threads, 24.4
// with 512; 512 KiB 21.0 against 26.0 (2026-11-22-ll-channels.txt). LL128 on 32 channels of 2 H200
// at 2 MiB, eager / replayed from a graph: AllReduce 19.3 / 18.7 us with 320 threads, 21.5 / 21.0
// with 640; AllGather 13.1 / 12.6 against 14.8 / 14.0; ReduceScatter 13.8 / 13.4 against 15.5 / 14.7;
// at 4 MiB the same or better with 320; 640 gains only at 8 MiB, where Simple is faster than both
// (2026-11-30-two-rank-ll128.txt, 2026-11-30-two-rank-windows-and-eager.txt).
constexpr int kMaxGrownThreads[kNumProtos] = {256, 320, 512};

// LL and LL128 start from CTAs this small and add channels first: a receiving thread spins on its
// own lines and every step ends at a barrier of the whole CTA, so a CTA of few warps steps faster.
// Measured on 4 H200, AllReduce LL at 64 KiB: 14.1 us on 16 channels x 128 threads, 20.8 us on
// 1 x 512; LL128 at 1 MiB: 24.5 us with 160 threads, 36.3 with 640.
constexpr int kSmallCtaThreads[kNumProtos] = {128, 160, 0};
// Once every channel is in use, their threads double while each would keep this many bytes
// (LL: its kThreadThresholdBytes rule; LL128 grows later, see above).
constexpr uint64_t kLl128GrowBytesPerThread = 64;

// Direct: CTAs of kDirectThreads, one per kDirectBytesPerCta received bytes up to every direct
// channel, then twice the threads (up to kMaxDirectThreads) while each thread would still receive
// two lines (16 bytes). 4 H200, AllReduce 64 KiB: 14.1 us with 512 threads.
constexpr int kDirectThreads = 128;
constexpr int kMaxDirectThreads = 256;
constexpr uint64_t kDirectBytesPerCta = 2 << 10;
// Direct on Simple: one CTA per this many bytes its rank receives (each CTA copies its share to
// every peer; a Simple ring channel moves ~20 GB/s), up to every direct channel. Not yet fitted.
constexpr uint64_t kDirectSimpleBytesPerCta = 64 << 10;
// Symmetric kernels (device/coll/symmetric_colls.h): one CTA per kSymmetricBytesPerCta its rank
// loads from or stores to its peers, up to every direct channel; time = base (the kernel's launch and
// two barriers with every peer; a kernel that loads from its peers waits for their round trips too)
// + Direct's price per peer past the first + those bytes / min(CTAs x kSymmetricCtaGBps, the pair's
// link bandwidth x kSymmetricBwFactor). Fitted on 2 H200 (tune-plans/2026-11-30-symmetric-cta-count.txt,
// NCCL_SYM_CTAS 1-16, 16 KiB-16 MiB): AllGather, which only stores, took 8.0-8.5 us at 16 KiB and the
// kernels that load 10.4-11.5; a CTA moved 20-29 GB/s across, 16 of them 296 (ReduceScatter), 326
// (two-shot AllReduce) and 346 (AllGather) GB/s of the 371 the topology gives the pair; CTAs past
// what the bytes need cost 0.3-0.5 us at 16 KiB, and one CTA per 64 KiB had left 1 MiB at half speed.
constexpr uint64_t kSymmetricBytesPerCta = 16 << 10;
constexpr double kSymmetricStoreBaseUs = 8.3;
constexpr double kSymmetricLoadBaseUs = 11.3;
constexpr double kSymmetricCtaGBps = 25.0;
constexpr double kSymmetricBwFactor = 0.85;
// From kSymmetricPreferredBytes to kSymmetricPreferredMaxBytes of the operation (by CollId;
// AllReduce: the two-shot, both buffers windows) the symmetric kernels are taken over the
// estimates, which there favour the rings: on 2 H200 the symmetric kernels took AllGather 14.4 /
// 32.7 us at 4 / 16 MiB (its LL128 ring 14.8 at 4 MiB, 24.8 at 8, the Simple ring 44.3 at 16),
// ReduceScatter 39.6 at 16 MiB (the rings 44.5) and AllReduce 63.0 (70.3); below 8 MiB the LL128
// ring with its step compiled in is faster for ReduceScatter and AllReduce (15.7 and 22.5 us at 4
// MiB against 18.6 and 24.6). Above the bounds the ring is right: from 64 MiB ReduceScatter's loads
// keep to ~225 GB/s against the ring's 240-303, from 256 MiB AllReduce moves 308-312 against
// 318-344; AllGather's stores stay ahead to 1 GiB (355 GB/s against 299).
// (tune-plans/2026-11-30-symmetric-cta-count.txt, -symmetric-large.txt, -two-rank-ll128-simple.txt.)
// Broadcast, Reduce and the one-hop AllReduce are not measured: by the estimates alone.
constexpr uint64_t kSymmetricPreferredBytes[kNumColls] = {UINT64_MAX, UINT64_MAX, 4 << 20, 8 << 20, 8 << 20};
constexpr uint64_t kSymmetricPreferredMaxBytes[kNumColls] = {0, 0, UINT64_MAX, 16 << 20, 64 << 20};

// Channels, then threads, are reduced while bytes < nChannels * nThreads * threshold, so that every
// thread has at least this much work. Ring LL multiplies it by nranks (NCCL's rule): an LL thread
// moves its data nranks-1 or 2(nranks-1) times, one flag round trip each.
constexpr uint64_t kThreadThresholdBytes[kNumProtos] = {8, 8, 64};

// ---- Chunk (payload bytes per ring step per channel) ----

// Grain a chunk is rounded to. LL: two 16-byte lines of 8 data bytes (keeps 16-byte vector
// alignment of the user data); LL128: one warp's pass, 32 lanes / 8 lanes per line = 4 lines of
// 120 data bytes; Simple: one 16-byte vector. Every grain is a multiple of every element size.
constexpr uint32_t kChunkGrainBytes[kNumProtos] = {16, 480, 16};

// A step is split no finer than one full pass of the CTA (nThreads * this), unless the block itself
// is smaller: a smaller step leaves threads idle and pays the per-step flag / fence cost for less
// data. LL: 8 data bytes per thread per line; LL128: 120 bytes per 8 lanes = 15; Simple: 16-byte
// vectors unrolled 8 times (kSimpleUnroll).
constexpr uint32_t kPassBytesPerThread[kNumProtos] = {8, 15, 128};

// AllReduce, AllGather and ReduceScatter move each rank block (one channel's share of one rank's
// part) in one step where the slot holds it: the ranks of a ring advance in lockstep (a rank's next
// step needs the step its predecessor just made), so cutting a block into k steps adds k - 1 flag
// round trips per hop and shortens nothing (each costs ~2 us with Simple on NVLink).

// Broadcast and Reduce go down a chain of nranks-1 hops: cutting a channel's data into more steps
// shortens the pipeline fill, up to the FIFO depth, but every step costs ~1 us of flag handling at
// each rank (4 H200: LL Broadcast of 4 KiB in 4 steps took 10 us, of 1 KiB in one step 5.5 us), so
// a chain step carries at least kMinChainStepBytes.
constexpr int kStepsPerChain = kFifoSlotsLL;  // the deepest FIFO
constexpr uint64_t kMinChainStepBytes = 32 << 10;

// A chain hop costs less than a ring hop (topo's hopLatencyUs): a rank forwards without waiting
// for its own send of the previous step, so hops overlap. Fitted on 4 H200 (Broadcast 1-4 KiB:
// LL 5.5 us, LL128 7-8 us, Simple 7.2 us).
constexpr double kChainHopFactor = 0.3;

// Thread-block clusters (Hopper and later), where ncclConfig_t.cgaClusterSize is left to Braid: of
// 4 CTAs, NCCL's default, which on 4 H200 lifted Broadcast of 1 GiB from 335 to 363 GB/s and
// AllReduce from 346 to 358 (2026-11-22), and on 2 H200 Broadcast of 256 MiB from 334 to 362. A
// two-rank AllGather or ReduceScatter ring of Simple steps runs without: on 2 H200 clusters of 4
// cost them 7-11% at 256 MiB and 4-6% at 1 GiB (AllGather 268 against 290 GB/s, ReduceScatter
// 258 against 289 at 256 MiB; clusters of 2 lost half as much), where AllReduce and Reduce moved
// within -1% to +4% (docs/performance-log.md, 2026-11-23).
constexpr int kClusterCtas = 4;

}  // namespace braid::plan
