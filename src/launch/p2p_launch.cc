// Launch of a group's sends and receives on one communicator: one point-to-point kernel
// (device/kernel_p2p.cu) whose work list is built here, which also makes the self pairs' copies;
// plain device copies when the group has only self pairs.
//
// Work list: one queue per (peer, direction), operations in issue order. An operation of B bytes
// is split over plan::p2pChannelsFor(B) channels in 16-byte-multiple parts; channel c of a queue becomes
// one CTA that moves part c of every operation of the queue, skipping empty parts (a zero-copy
// operation's part carries its place in the receiver's buffer, see p2p_reg.cc). A balanced
// operation (P2pBalance) is instead one segment on each of its channels, the whole operation, whose
// chunks those CTAs share. The two ends of a connection see the same operations in the same order
// with the same sizes, so they compute the same parts and make the same operations balanced.
//
// A group too large for one work list runs in rounds (plan::kP2pOpsPerRound): round r is one kernel
// moving operations r * K to r * K + K - 1 of every queue, and the rounds run in order. The k-th send
// from rank a to rank b and the k-th receive b posts from a fall in the same round on both ranks,
// whatever else their groups hold, so round r of every rank needs only round r of its peers, which
// follow from rounds r - 1 by induction. A rank whose group fits one kernel serves each queue in
// order on CTAs that are all resident, which a peer running rounds can rely on the same way. The
// self copies of a group in rounds are plain device copies.
//
// A group with staged sends (in-place AlltoAll) may instead run in batches of peers, each one
// kernel (or rounds) of its own (p2p_stage.cc).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "core/comm.h"
#include "cuda/cuda_check.h"
#include "cuda/scoped_device.h"
#include "device/launch_kernel.h"
#include "launch/device_state.h"
#include "launch/p2p_engine.h"
#include "launch/share_membership.h"
#include "launch/watch_link.h"
#include "plan/p2p_plan.h"
#include "util/check.h"
#include "util/log.h"

namespace braid {

uint64_t P2pBalance::chunk(const P2pTask& op, size_t indexInQueue, int maxChannels) const {
  if (indexInQueue >= static_cast<size_t>(plan::kP2pBalancedOpsPerPeer) || op.direct != nullptr) return 0;
  if (p2pPairs == nullptr || (*p2pPairs)[op.peer] == 0) return 0;
  return plan::p2pBalancedChunk(op.bytes, plan::p2pChannelsFor(op.bytes, maxChannels), slotBytes, minBytes, chunkBytes);
}

namespace {

constexpr uint64_t kP2pMinThreads = 128;
constexpr uint64_t kP2pMaxThreads = 512;

using SelfPairs = P2pSelfPairs;
using Queues = P2pQueues;

static_assert(DevP2pArgsMedium::kMaxCtas >= 2 * kMaxP2pChannels + plan::kP2pSelfCopyCtas,
              "one peer both ways on every channel, with the self copies, fits the medium work list");
static_assert(plan::kP2pOpsPerRound * DevP2pArgsLarge::kMaxCtas <= DevP2pArgsLarge::kMaxSegs,
              "a round's segments (at most kP2pOpsPerRound per CTA) fit the large work list");

// The channels, so the CTAs, of one queue: those of its largest operation.
int queueChannels(const std::vector<const P2pTask*>& ops, int maxChannels) {
  int channels = 0;
  for (const P2pTask* op : ops) channels = std::max(channels, plan::p2pChannelsFor(op->bytes, maxChannels));
  return channels;
}

// The queues of `tasks` (see the header comment); self and empty operations are left out.
Queues queuesOf(const std::vector<P2pTask>& tasks, int self, size_t* longestQueue) {
  Queues queues;
  *longestQueue = 0;
  for (const P2pTask& t : tasks) {
    if (t.peer == self || t.bytes == 0) continue;
    std::vector<const P2pTask*>& queue = queues[{t.peer, t.send}];
    queue.push_back(&t);
    *longestQueue = std::max(*longestQueue, queue.size());
  }
  return queues;
}

// The CTAs of the queues, which must all be resident at once.
int queuesCtas(const Queues& queues, const std::vector<int>& peerChannels) {
  int ctas = 0;
  for (const auto& [key, ops] : queues) ctas += queueChannels(ops, peerChannels[key.first]);
  return ctas;
}

// Round `round` of `queues`: the slice of each queue that it moves (empty slices left out), and
// those operations in one list for the progress board.
Queues roundOf(const Queues& queues, size_t round, std::vector<P2pTask>* tasks) {
  Queues slice;
  tasks->clear();
  const size_t first = round * plan::kP2pOpsPerRound;
  for (const auto& [key, ops] : queues) {
    if (first >= ops.size()) continue;
    const size_t end = std::min(ops.size(), first + plan::kP2pOpsPerRound);
    std::vector<const P2pTask*>& mine = slice[key];
    mine.assign(ops.begin() + static_cast<std::ptrdiff_t>(first), ops.begin() + static_cast<std::ptrdiff_t>(end));
    for (const P2pTask* op : mine) tasks->push_back(*op);
  }
  return slice;
}

// Appends the CTA of one channel, moving segmentFor(op, i) of each of `ops` (the i-th of its
// queue; a segment of 0 bytes is nothing on this channel). False if the CTA or its segments do not
// fit.
template <typename Args, typename Ops, typename SegmentFor>
bool addCta(const Ops& ops, DevSendConn* send, DevRecvConn* recv, bool guarded, Args* args, int* nSegs,
            uint64_t* largestPart, bool* balanced, const SegmentFor& segmentFor) {
  if (args->nCtas == Args::kMaxCtas) return false;
  DevP2pCta& cta = args->ctas[args->nCtas++];
  cta.conn = send != nullptr ? static_cast<void*>(send) : static_cast<void*>(recv);
  const int role = send != nullptr ? kP2pSend : recv != nullptr ? kP2pRecv : kP2pSelfCopy;
  cta.role = static_cast<int16_t>(guarded ? role | kP2pGuarded : role);
  cta.firstSeg = *nSegs;
  cta.nSegs = 0;
  for (size_t i = 0; i < ops.size(); i++) {
    const DevP2pSeg seg = segmentFor(ops[i], i);
    if (seg.bytes == 0) continue;
    if (*nSegs == Args::kMaxSegs) return false;
    args->segs[(*nSegs)++] = seg;
    cta.nSegs++;
    *largestPart = std::max(*largestPart, seg.balancedPages != 0 ? seg.balancedPages * kP2pBalancedPage : seg.bytes);
    *balanced = *balanced || seg.balancedPages != 0;
  }
  return true;
}

// Part `channel` of a static operation, or the whole operation for each of its channels if it is
// balanced (P2pBalance::chunk).
DevP2pSeg queueSegment(const P2pTask& op, int channel, int maxChannels, uint64_t balancedChunk, uint32_t ticket) {
  const int channels = plan::p2pChannelsFor(op.bytes, maxChannels);
  if (balancedChunk != 0) {
    if (channel >= channels) return DevP2pSeg{};
    return DevP2pSeg{op.buff,
                     nullptr,
                     op.bytes,
                     ticket,
                     static_cast<uint16_t>(balancedChunk / kP2pBalancedPage),
                     static_cast<uint16_t>(channels)};
  }
  const plan::P2pPart part = plan::p2pPart(op.bytes, channel, channels);
  if (part.bytes == 0) return DevP2pSeg{};
  return DevP2pSeg{
      op.buff + part.offset, op.direct != nullptr ? op.direct + part.offset : nullptr, part.bytes, 0, 0, 0};
}

// Fills args from the queues, then the self copies; false if they do not fit its capacity. The
// queues' first operations are the firstIndex-th of theirs in the group (a round's, see above).
// *balanced: a segment is balanced.
template <typename Args>
bool buildP2pArgs(const Queues& queues, size_t firstIndex, const SelfPairs& selfPairs, DevP2pPeer* devPeers,
                  const std::vector<int>& peerChannels, const P2pBalance& balance, Args* args, uint64_t* largestPart,
                  bool* balanced) {
  int nSegs = 0;
  args->nCtas = 0;
  *largestPart = 0;
  *balanced = false;
  for (const auto& [key, ops] : queues) {
    const int peer = key.first;  // not a structured binding: the lambda below captures it
    const bool isSend = key.second;
    const int maxChannels = peerChannels[peer];
    const int channels = queueChannels(ops, maxChannels);
    // A guarded operation is alone in its queue (guardInPlace): the CTA's one segment is guarded.
    const bool guarded = ops.size() == 1 && ops.front()->guarded;
    for (int c = 0; c < channels; c++) {
      DevSendConn* send = isSend ? &devPeers[peer].send[c] : nullptr;
      DevRecvConn* recv = isSend ? nullptr : &devPeers[peer].recv[c];
      auto segmentFor = [&](const P2pTask* op, size_t i) {
        const size_t index = firstIndex + i;  // in its queue
        if (guarded) {
          DevP2pSeg seg = queueSegment(*op, c, maxChannels, 0, 0);
          seg.ticket = static_cast<uint32_t>(peer * kMaxP2pChannels + c);
          return seg;
        }
        const uint32_t ticket =
            static_cast<uint32_t>(peer * plan::kP2pBalancedOpsPerPeer) + static_cast<uint32_t>(index);
        return queueSegment(*op, c, maxChannels, balance.chunk(*op, index, maxChannels), ticket);
      };
      if (!addCta(ops, send, recv, guarded, args, &nSegs, largestPart, balanced, segmentFor)) return false;
    }
  }
  uint64_t largestSelf = 0;
  for (const auto& [send, recv] : selfPairs)
    largestSelf = std::max(largestSelf, send->buff != recv->buff ? send->bytes : 0);
  if (largestSelf == 0) return true;
  const int selfCtas = plan::p2pChannelsFor(largestSelf, plan::kP2pSelfCopyCtas);
  for (int c = 0; c < selfCtas; c++) {
    // A self CTA's segment: buff is the receive buffer, direct the send buffer it copies from.
    auto segmentFor = [&](const std::pair<const P2pTask*, const P2pTask*>& pair, size_t) {
      const auto [send, recv] = pair;
      const uint64_t bytes = send->buff != recv->buff ? send->bytes : 0;
      if (bytes == 0) return DevP2pSeg{};
      const plan::P2pPart part = plan::p2pPart(bytes, c, plan::p2pChannelsFor(bytes, plan::kP2pSelfCopyCtas));
      return DevP2pSeg{recv->buff + part.offset, send->buff + part.offset, part.bytes, 0, 0, 0};
    };
    if (!addCta(selfPairs, nullptr, nullptr, false, args, &nSegs, largestPart, balanced, segmentFor)) return false;
  }
  return true;
}

// Workers per CTA: enough for one pass over the largest part, 128 bytes (kSimpleUnroll 16-byte
// packs) per thread, within [kP2pMinThreads, kP2pMaxThreads]. Workers beyond that only wait at the
// barriers, fewer take a second pass. 2 H200, same-run A/B on 32 KiB parts: 512 workers were 5-13%
// slower than 128, 256 were 2-4% faster; on 16 KiB parts 128 beat 256 by up to 5%.
int p2pThreads(uint64_t largestPart) {
  const uint64_t onePass = (largestPart / 128 + 31) / 32 * 32;
  return static_cast<int>(std::clamp<uint64_t>(onePass, kP2pMinThreads, kP2pMaxThreads));
}

// The kernel's work list, in the smallest parameter variant that holds it (see DevP2pArgs). The
// bigger ones are made (and zeroed) only when the smaller did not fit; the large one, 31 KiB, on the
// heap.
struct P2pLaunchArgs {
  DevP2pArgsSmall small{};
  std::optional<DevP2pArgsMedium> medium;
  std::unique_ptr<DevP2pArgsLarge> large;
  uint64_t largestPart = 0;
  bool balanced = false;  // some segment is balanced

  int nCtas() const {
    if (large != nullptr) return large->nCtas;
    return medium.has_value() ? medium->nCtas : small.nCtas;
  }

  // False if even the large variant cannot hold the work.
  bool build(const Queues& queues, size_t firstIndex, const SelfPairs& selfPairs, DevP2pPeer* devPeers,
             const std::vector<int>& peerChannels, const P2pBalance& balance) {
    auto buildInto = [&](auto* args) {
      return buildP2pArgs(queues, firstIndex, selfPairs, devPeers, peerChannels, balance, args, &largestPart,
                          &balanced);
    };
    if (buildInto(&small)) return true;
    if (buildInto(&medium.emplace())) return true;
    medium.reset();
    large = std::make_unique<DevP2pArgsLarge>();
    return buildInto(large.get());
  }

  // waitNotes and seq: where and as what the kernel notes its long waits for hang reports (null and
  // 0: nowhere).
  cudaError_t launch(const volatile int* abortFlag, uint64_t slotBytes, uint64_t* tickets, uint64_t* guards,
                     DevWaitNotes* waitNotes, uint64_t seq, bool sharedSteps, const LaunchOptions& launch,
                     cudaStream_t stream) {
    auto launchArgs = [&](auto& args) {
      args.abortFlag = abortFlag;
      args.sharedSteps = sharedSteps ? 1 : 0;
      args.slotBytes = slotBytes;
      args.tickets = tickets;
      args.guards = guards;
      args.waitNotes = waitNotes;
      args.seq = seq;
      return launchP2pKernel(args, p2pThreads(largestPart), balanced, launch, stream);
    };
    if (large != nullptr) return launchArgs(*large);
    if (medium.has_value()) return launchArgs(*medium);
    return launchArgs(small);
  }
};

}  // namespace

// A self send and a self receive are matched in issue order within the group; each pair is one copy.
ncclResult_t P2pEngine::matchSelf(const std::vector<P2pTask>& tasks, P2pSelfPairs* pairs) const {
  std::vector<const P2pTask*> sends;
  std::vector<const P2pTask*> recvs;
  for (const P2pTask& t : tasks) {
    if (t.peer == ctx_.comm->rank_) (t.send ? sends : recvs).push_back(&t);
  }
  if (sends.size() != recvs.size()) {
    WARN(
        "rank %d: a group has %zu sends to itself and %zu receives from itself; each self send needs its self "
        "receive in the same group",
        ctx_.comm->rank_, sends.size(), recvs.size());
    return ncclInvalidUsage;
  }
  for (size_t i = 0; i < sends.size(); i++) {
    if (sends[i]->bytes != recvs[i]->bytes) {
      WARN("rank %d: self send %zu has %zu bytes but its matching self receive %zu bytes", ctx_.comm->rank_, i,
           sends[i]->bytes, recvs[i]->bytes);
      return ncclInvalidUsage;
    }
    pairs->emplace_back(sends[i], recvs[i]);
  }
  return ncclSuccess;
}

// The group's other streams join its launch stream before the launch (before = true) and wait for
// it afterwards, so that the whole group is ordered on every stream it used.
ncclResult_t P2pEngine::joinStreams(const std::vector<P2pTask>& tasks, cudaStream_t main, bool before) {
  std::vector<cudaStream_t> done{main};
  for (const P2pTask& t : tasks) {
    if (std::find(done.begin(), done.end(), t.stream) != done.end()) continue;
    done.push_back(t.stream);
    if (before) {
      CUDACHECK(cudaEventRecord(joinEvent_, t.stream));
      CUDACHECK(cudaStreamWaitEvent(main, joinEvent_, 0));
    } else {
      NCCLCHECK(ctx_.share->order().join(t.stream));
    }
  }
  return ncclSuccess;
}

ncclResult_t P2pEngine::launch(const std::vector<P2pTask>& groupTasks, reg::Registry* registry) {
  ScopedDevice device(ctx_.comm->cudaDev_);
  cudaStream_t stream = groupTasks.front().stream;
  // In place without staging where every staged send qualifies (p2p_stage.cc).
  std::vector<P2pTask> guardedTasks;
  const std::vector<P2pTask>& tasks = guardInPlace(groupTasks, directPair_, &guardedTasks) ? guardedTasks : groupTasks;
  for (const P2pTask& t : tasks) {
    const char* inPlace = t.staged ? " (in place: staged)" : t.guarded ? " (in place: guarded)" : "";
    INFO(kLogColl, "%s: buff %p bytes %zu peer %d comm %p [nranks=%d] stream %p%s", t.send ? "Send" : "Recv",
         static_cast<void*>(t.buff), t.bytes, t.peer, static_cast<void*>(ctx_.comm), ctx_.comm->nranks_,
         static_cast<void*>(t.stream), inPlace);
  }
  // Checked (and the staging memory made) before anything is enqueued, so that a refused group
  // launches nothing.
  SelfPairs selfPairs;
  NCCLCHECK(matchSelf(tasks, &selfPairs));
  size_t longestQueue = 0;
  const Queues queues = queuesOf(tasks, ctx_.comm->rank_, &longestQueue);
  if (queuesCtas(queues, peerChannels_) > residentCtas_) {
    // A CTA may wait for its partner on the peer, so a group runs only if all of its CTAs fit.
    WARN("rank %d: a group's sends and receives need more than the %d CTAs one communicator keeps resident",
         ctx_.comm->rank_, residentCtas_);
    return ncclInvalidUsage;
  }
  P2pStaging staging;
  NCCLCHECK(planStaging(tasks, longestQueue, &staging));

  const std::unique_lock<std::mutex> lock = ctx_.share->launchLock();  // to the end: joinStreams reads the order too
  NCCLCHECK(ctx_.share->order().before(stream));
  NCCLCHECK(joinStreams(tasks, stream, true));
  cudaEvent_t launchEvent = nullptr;  // one per group at most (enqueueP2p)
  for (const P2pTask& t : tasks) launchEvent = t.launchEvent != nullptr ? t.launchEvent : launchEvent;
  if (staging.batches.empty()) {
    NCCLCHECK(launchKernels(tasks, queues, longestQueue, selfPairs, stream, launchEvent));
  } else {
    NCCLCHECK(launchStaged(staging, selfPairs, stream, launchEvent));
  }
  for (const P2pTask& t : tasks) {
    if (t.reg != nullptr) NCCLCHECK(registry->noteUse(t.reg, stream));
  }
  NCCLCHECK(ctx_.share->order().after(stream));
  return joinStreams(tasks, stream, false);
}

ncclResult_t P2pEngine::launchKernels(const std::vector<P2pTask>& tasks, const SelfPairs& selfPairs,
                                      cudaStream_t stream, cudaEvent_t launchEvent) {
  size_t longestQueue = 0;
  const Queues queues = queuesOf(tasks, ctx_.comm->rank_, &longestQueue);
  return launchKernels(tasks, queues, longestQueue, selfPairs, stream, launchEvent);
}

ncclResult_t P2pEngine::launchKernels(const std::vector<P2pTask>& tasks, const Queues& queues, size_t longestQueue,
                                      const SelfPairs& selfPairs, cudaStream_t stream, cudaEvent_t launchEvent) {
  const P2pBalance balance{&directPair_, slotBytes_, balanceBytes_, balanceChunk_};
  P2pLaunchArgs whole;
  const bool oneKernel =
      queues.empty() || whole.build(queues, 0, selfPairs, ctx_.device->p2pPeers(), peerChannels_, balance);

  // One kernel moving `args`; `noted` are its operations, for the progress board. The last one
  // records the launch event.
  auto launchKernel = [&](P2pLaunchArgs& args, const std::vector<P2pTask>& noted, bool last) -> ncclResult_t {
    uint64_t seq = 0;
    DevWaitNotes* waitNotes = nullptr;
    // A captured launch is numbered as a capture: its replays are not counted (p2p_progress.h).
    if (ctx_.share->order().launchCaptured()) {
      ctx_.watch->noteP2pCapture(noted, args.nCtas(), &seq, &waitNotes);
    } else {
      ctx_.watch->noteP2pLaunch(noted, args.nCtas(), &seq, &waitNotes);
    }
    LaunchOptions launch = ctx_.launch.plain;
    if (last) {
      NCCLCHECK(ctx_.launch.withLaunchEvent(ctx_.launch.plain, launchEvent, stream,
                                            ctx_.share->order().launchCaptured(), &launch));
    }
    CUDACHECK(args.launch(ctx_.device->deviceAbortFlag(), slotBytes_, ctx_.device->p2pTickets(),
                          ctx_.device->p2pGuards(), waitNotes, seq, ctx_.share->stepsInGroupWords(), launch, stream));
    if (last) NCCLCHECK(ctx_.launch.afterCapturedLaunch(launchEvent, stream, ctx_.share->order().launchCaptured()));
    return ncclSuccess;
  };

  if (!queues.empty() && oneKernel) return launchKernel(whole, tasks, true);
  const size_t rounds = (longestQueue + plan::kP2pOpsPerRound - 1) / plan::kP2pOpsPerRound;
  if (rounds > 0) {
    INFO(kLogColl, "rank %d: a group of %zu sends and receives runs in %zu rounds", ctx_.comm->rank_, tasks.size(),
         rounds);
  }
  const SelfPairs noPairs;
  std::vector<P2pTask> roundTasks;
  for (size_t r = 0; r < rounds; r++) {
    const Queues round = roundOf(queues, r, &roundTasks);
    P2pLaunchArgs args;
    if (!args.build(round, r * plan::kP2pOpsPerRound, noPairs, ctx_.device->p2pPeers(), peerChannels_, balance)) {
      WARN("rank %d: round %zu of a group's sends and receives does not fit a kernel's work list", ctx_.comm->rank_, r);
      return ncclInternalError;  // plan::kP2pOpsPerRound makes every round fit
    }
    NCCLCHECK(launchKernel(args, roundTasks, r + 1 == rounds));
  }
  // Only self copies: no kernel, the event is recorded where they begin.
  if (rounds == 0 && launchEvent != nullptr) CUDACHECK(cudaEventRecord(launchEvent, stream));
  for (const auto& [send, recv] : selfPairs) {
    if (send->buff != recv->buff && send->bytes > 0) {
      CUDACHECK(cudaMemcpyAsync(recv->buff, send->buff, send->bytes, cudaMemcpyDeviceToDevice, stream));
    }
  }
  if (rounds == 0)
    NCCLCHECK(ctx_.launch.afterCapturedLaunch(launchEvent, stream, ctx_.share->order().launchCaptured()));
  return ncclSuccess;
}

}  // namespace braid
