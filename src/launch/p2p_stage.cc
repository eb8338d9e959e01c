// In-place AlltoAll. Where every block fits its peer's FIFOs and every peer is a P2P pair, nothing
// is staged: each receive waits, channel by channel, until this rank's send of the same block has
// read it (guardInPlace below, device/kernel_p2p.cu). Otherwise the group's staged sends are
// copied into the communicator's staging memory and sent from there, in batches of peers
// (plan/p2p_stage.h). The first batch's copies run before its kernel; each later batch's copies run
// inside the previous batch's kernel, on its self-copy CTAs, into the other half of the memory: they
// read blocks that no earlier batch writes, and the half they fill was last read by the batch
// before the previous one, which has ended (the kernels run in stream order).
//
// The memory is the communicator's, shared by all its operations: they never run at the same time
// (LaunchOrder), so each use of it ends before the next one begins, replays of captured launches
// included.
#include "launch/p2p_stage.h"

#include <algorithm>
#include <cstdint>

#include "core/comm.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_driver.h"
#include "launch/device_state.h"
#include "launch/p2p_engine.h"
#include "plan/p2p_plan.h"
#include "plan/p2p_stage.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// Places batch `batch`'s staged sends in `memory` (as laid out by planStageCopies) and notes the
// copies that fill it.
void placeBatch(P2pStageBatch* batch, const std::vector<plan::StageCopy>& copies, const std::vector<uint64_t>& offsets,
                char* memory, int rank) {
  size_t i = 0;
  for (P2pTask& t : batch->tasks) {
    if (t.staged) t.buff = memory + offsets[i++];
  }
  for (const plan::StageCopy& c : copies) {
    char* src = reinterpret_cast<char*>(static_cast<uintptr_t>(c.src));
    batch->copyFrom.push_back(P2pTask{true, rank, src, c.bytes, c.bytes, ncclInt8, nullptr});
    batch->copyTo.push_back(P2pTask{false, rank, memory + c.dstOffset, c.bytes, c.bytes, ncclInt8, nullptr});
  }
}

// The base of the device allocation holding addr, so that no copy spans two allocations; 0 where the
// driver cannot say (the range then gets a copy of its own).
uint64_t allocationOf(uint64_t addr) {
  const CudaDriver* drv = nullptr;
  if (cudaDriver(&drv) != ncclSuccess) return 0;
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (drv->cuMemGetAddressRange(&base, &bytes, static_cast<CUdeviceptr>(addr)) != CUDA_SUCCESS) return 0;
  return static_cast<uint64_t>(base);
}

}  // namespace

// A staged send goes guarded instead (DevP2pCta's kP2pGuarded) when it and its receive are the only
// operations with their peer in the group, on the same range, over P2P, on the FIFO path (not
// zero-copy, not balanced: the peer, whose operations with this rank are the same ones in the same
// order, decides both alike), and each of its channel parts fits the channel's FIFO: the send then
// finishes without waiting for the peer, so the receive that waits for it always starts. The peer
// sees the same steps either way, so ranks still choose in place or not independently.
bool P2pEngine::guardInPlace(const std::vector<P2pTask>& tasks, const std::vector<char>& p2pPairs,
                             std::vector<P2pTask>* out) const {
  // Every point-to-point launch asks: the common case (nothing in place) first.
  if (std::none_of(tasks.begin(), tasks.end(), [](const P2pTask& t) { return t.staged; })) return false;
  if (paramInt(ParamId::kP2pInPlaceGuard) == 0) return false;
  const int rank = ctx_.comm->rank_;
  std::vector<int> sends(static_cast<size_t>(ctx_.comm->nranks_), 0);
  std::vector<int> recvs(sends.size(), 0);
  for (const P2pTask& t : tasks) (t.send ? sends : recvs)[static_cast<size_t>(t.peer)]++;
  const P2pBalance balance{&p2pPairs, slotBytes_, balanceBytes_, balanceChunk_};
  const uint64_t fifoBytes = slotBytes_ * kFifoSlotsSimple;
  *out = tasks;
  for (P2pTask& send : *out) {
    if (!send.staged) continue;
    const auto p = static_cast<size_t>(send.peer);
    if (send.peer == rank || p >= p2pPairs.size() || p2pPairs[p] == 0 || sends[p] != 1 || recvs[p] != 1) return false;
    auto recv =
        std::find_if(out->begin(), out->end(), [&](const P2pTask& t) { return !t.send && t.peer == send.peer; });
    if (recv->buff != send.buff || recv->bytes != send.bytes || send.direct != nullptr || recv->direct != nullptr) {
      return false;
    }
    // Before the first connect (ncclGroupSimulateEnd connects nothing) every peer has channels_.
    const int maxChannels = p < peerChannels_.size() ? peerChannels_[p] : channels_;
    if (balance.chunk(send, 0, maxChannels) != 0) return false;
    if (!plan::guardFits(send.bytes, plan::p2pChannelsFor(send.bytes, maxChannels), fifoBytes)) return false;
    send.staged = false;
    send.guarded = recv->guarded = true;
  }
  return true;
}

plan::StagePlan P2pEngine::stagePlan(const std::vector<P2pTask>& tasks, size_t longestQueue) const {
  const int rank = ctx_.comm->rank_;
  const int nranks = ctx_.comm->nranks_;
  std::vector<uint64_t> stagedBytes(static_cast<size_t>(nranks), 0);
  for (const P2pTask& t : tasks) {
    if (t.staged && t.peer != rank) stagedBytes[static_cast<size_t>(t.peer)] += t.bytes;
  }
  const uint64_t budget = static_cast<uint64_t>(std::max<int64_t>(paramInt(ParamId::kP2pStageBytes), 0));
  // Batches need each pair's operations in one kernel: a group in rounds of operations is one batch.
  const bool oneBatch = longestQueue > static_cast<size_t>(plan::kP2pOpsPerRound);
  return plan::planStageBatches(rank, nranks, stagedBytes, budget, plan::p2pPortPeers(channels_), oneBatch);
}

ncclResult_t P2pEngine::planStaging(const std::vector<P2pTask>& tasks, size_t longestQueue, P2pStaging* staging) {
  if (std::none_of(tasks.begin(), tasks.end(), [](const P2pTask& t) { return t.staged; })) return ncclSuccess;
  const int rank = ctx_.comm->rank_;
  const plan::StagePlan plan = stagePlan(tasks, longestQueue);
  if (plan.batches() == 0) return ncclSuccess;

  std::vector<P2pStageBatch> batches(static_cast<size_t>(plan.batches()));
  for (const P2pTask& t : tasks) {
    if (t.peer != rank) batches[static_cast<size_t>(plan.batchOfPeer[static_cast<size_t>(t.peer)])].tasks.push_back(t);
  }
  // Each batch's layout; the memory holds the largest twice when there are several (two halves).
  std::vector<std::vector<plan::StageCopy>> copies(batches.size());
  std::vector<std::vector<uint64_t>> offsets(batches.size());
  uint64_t half = 0;
  for (size_t b = 0; b < batches.size(); b++) {
    std::vector<plan::StageRange> ranges;
    for (const P2pTask& t : batches[b].tasks) {
      if (!t.staged) continue;
      const uint64_t addr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.buff));
      ranges.push_back(plan::StageRange{addr, t.bytes, allocationOf(addr)});
    }
    half = std::max(half, plan::planStageCopies(ranges, &copies[b], &offsets[b]));
  }
  half = (half + plan::kStageAlign - 1) / plan::kStageAlign * plan::kStageAlign;
  char* memory = nullptr;
  NCCLCHECK(ctx_.device->stageBuffer(batches.size() == 1 ? half : 2 * half, &memory));
  for (size_t b = 0; b < batches.size(); b++) {
    placeBatch(&batches[b], copies[b], offsets[b], memory + (b % 2) * half, rank);
  }
  INFO(kLogColl, "rank %d: %zu staged sends (in place) in %zu batches, %llu bytes of staging memory", rank,
       static_cast<size_t>(std::count_if(tasks.begin(), tasks.end(), [](const P2pTask& t) { return t.staged; })),
       batches.size(), static_cast<unsigned long long>(batches.size() == 1 ? half : 2 * half));
  staging->batches = std::move(batches);
  return ncclSuccess;
}

ncclResult_t P2pEngine::launchStaged(const P2pStaging& staging, const P2pSelfPairs& selfPairs, cudaStream_t stream,
                                     cudaEvent_t launchEvent) {
  const P2pStageBatch& first = staging.batches.front();
  for (size_t i = 0; i < first.copyFrom.size(); i++) {
    CUDACHECK(cudaMemcpyAsync(first.copyTo[i].buff, first.copyFrom[i].buff, first.copyFrom[i].bytes,
                              cudaMemcpyDeviceToDevice, stream));
  }
  for (size_t b = 0; b < staging.batches.size(); b++) {
    P2pSelfPairs pairs = b == 0 ? selfPairs : P2pSelfPairs{};
    if (b + 1 < staging.batches.size()) {
      const P2pStageBatch& next = staging.batches[b + 1];
      for (size_t i = 0; i < next.copyFrom.size(); i++) pairs.emplace_back(&next.copyFrom[i], &next.copyTo[i]);
    }
    const bool last = b + 1 == staging.batches.size();
    NCCLCHECK(launchKernels(staging.batches[b].tasks, pairs, stream, last ? launchEvent : nullptr));
  }
  return ncclSuccess;
}

}  // namespace braid
