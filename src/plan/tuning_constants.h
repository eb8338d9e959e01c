// The constants of the planner's cost model and of its channel / thread / chunk choice, in one
// place. The cost model has NCCL's shape (nccl-facts §4.1); the numbers start from NCCL 2.28's
// Hopper Ring defaults (§4.2) and are TO BE RECALIBRATED FROM BRAID-PERF MEASUREMENTS on Braid's own
// kernels. Index [p] is a ProtoId: {LL, LL128, Simple}.
#pragma once

#include <cstdint>

#include "device/dev_types.h"

namespace braid::plan {

// ---- Cost model: time_us = latency + bytes / (1000 * algBwGBps) ----

// Fixed cost of one Ring operation (launch, setup, completion), by protocol.
constexpr double kRingBaseLatencyUs[kNumProtos] = {6.6, 14.0, 8.4};

// Per-hop latencies topo may use to fill CommModel::hopLatencyUs (latency = base + nsteps * hop).
constexpr double kRingHopLatencyNvlinkUs[kNumProtos] = {0.6, 1.9, 3.4};
constexpr double kRingHopLatencyPcieUs[kNumProtos] = {1.0, 2.5, 5.7};

// Bus bandwidth = nChannels * bwPerChannel, then per protocol: LL carries 8 data bytes in each
// 16-byte line (x0.5) and is capped for the whole operation; LL128 carries 120 of 128 bytes and
// loses a little more to flag checks (x0.92), capped per channel; Simple runs at full bandwidth.
constexpr double kRingLlBwFactor = 0.5;
constexpr double kRingLl128BwFactor = 0.92;
constexpr double kLlMaxBusBwGBps[3] = {141.0, 45.0, 35.0};  // by node count: 1, 2, >= 3 (Hopper)
constexpr double kRingLl128MaxBwPerChannelGBps = 36.7;

// ---- Threads per CTA ----

// Start value (the maximum) per protocol, and the bounds an NCCL_NTHREADS (LL, Simple) or
// NCCL_LL128_NTHREADS (LL128) value must respect: a multiple of 32 in [min, max].
constexpr int kDefaultThreads[kNumProtos] = {512, 640, 512};
constexpr int kMaxThreads[kNumProtos] = {512, 640, 512};
constexpr int kMinOverrideThreads[kNumProtos] = {64, 160, 64};
// Automatic halving of the thread count for small operations stops here.
constexpr int kMinAutoThreads = 128;

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
// shortens the pipeline fill, up to the FIFO depth.
constexpr int kStepsPerChain = kMaxFifoSlots;

}  // namespace braid::plan
