// User buffer registration in the data path: ncclCommRegister's bookkeeping and REG line, which
// queued collectives may go zero-copy, and the exchange that decides it (reg_exchange.h).
//
// A collective goes zero-copy when every rank's shared buffer is registered (by ncclCommRegister,
// or, while the operation is being captured, by graph registration), the communicator connects
// every pair of ranks by NVLink P2P (the direct channels exist), and the plan is a Simple ring.
// The shared buffer is the receive buffer for AllReduce, AllGather and Broadcast (peers write into
// it) and the send buffer for ReduceScatter and Reduce (peers read from it; see DevRegPeers).
// Write-direct runs on half the CTAs of the copy path (a CTA moves each byte with fewer memory
// operations), and so does a two-rank ReduceScatter; other read-direct operations on all of them
// (plan::zeroCopyModel).
#include "core/comm.h"
#include "cuda/capture_mode.h"
#include "cuda/scoped_device.h"
#include "launch/buffer_registration.h"
#include "launch/collective_engine.h"
#include "launch/share_membership.h"
#include "launch/symmetric_lookup.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

// The buffer a zero-copy operation lets the peers reach, and its size.
void* sharedBuffer(const CollTask& task) {
  return readsPeerSendBuffers(task.coll) ? const_cast<void*>(task.sendbuff) : task.recvbuff;
}
size_t sharedBytes(const CollTask& task, int nranks) {
  return readsPeerSendBuffers(task.coll) ? collSendBytes(task, nranks) : collRecvBytes(task, nranks);
}

// Buffers in symmetric windows are the symmetric kernels', not the exchange's: every rank
// registered them alike, so every rank skips the same operations.
bool onSymmetricWindows(const CollTask& task, const CommWindowsBase* windows, int nranks) {
  return plan::symmetricKernelFits(lookUpSymmetric(windows, task, nranks).buffers, task.coll);
}

}  // namespace

ncclResult_t BufferRegistration::add(void* buff, size_t size, void** handle) {
  ScopedDevice device(ctx_.comm->cudaDev_);
  reg::Registration* reg = nullptr;
  NCCLCHECK(registry_.add(buff, size, &reg));
  const char* use =
      "used zero-copy by every collective when every pair of ranks is NVLink P2P (peers write into receive "
      "buffers, and read ReduceScatter's and Reduce's send buffers; BRAID_ZERO_COPY_EAGER_BYTES or more, 64 KiB in "
      "a CUDA graph), and by sends into it from P2P peers (as large, or 64 KiB in a CUDA graph)";
  if (paramInt(ParamId::kLocalRegister) == 0) {
    use = "not used (NCCL_LOCAL_REGISTER=0)";
  } else if (ctx_.comm->nranks_ == 1) {
    use = "not used (one rank: nothing to share)";
  } else if (collectives_.connected() && !collectives_.topology().allNvlinkP2p) {
    use =
        "not used by collectives (some pair of ranks of this communicator is not NVLink P2P), only by sends into "
        "it from P2P peers";
  }
  INFO(kLogReg, "ncclCommRegister: comm %p rank %d buff %p size %zu: allocation %p (%zu bytes), %s; %s",
       static_cast<void*>(ctx_.comm), ctx_.comm->rank_, buff, size, static_cast<void*>(reg->allocBase), reg->allocBytes,
       reg::sharingSummary(*reg).c_str(), use);
  *handle = reg;
  return ncclSuccess;
}

// An eager operation exchanges every time, so only from BRAID_ZERO_COPY_EAGER_BYTES (its
// description has the figures); a captured one exchanges once, at capture. Every rank sees the same
// size and, as NCCL requires of graphs, captures it or not alike. The size comes first: the capture
// query is a CUDA call, on every eager operation's way to the launch.
bool BufferRegistration::zeroCopySize(size_t bytes, cudaStream_t stream) const {
  if (bytes < kZeroCopyMinBytes) return false;
  return static_cast<int64_t>(bytes) >= paramInt(ParamId::kZeroCopyEagerBytes) || streamCapturing(stream);
}

bool BufferRegistration::graphRegisters(size_t bytes, cudaStream_t stream) const {
  return paramInt(ParamId::kGraphRegister) != 0 && bytes >= kZeroCopyMinBytes && streamCapturing(stream);
}

bool BufferRegistration::graphRegisters(const CollTask& task) const {
  return graphRegisters(collBytes(task, ctx_.comm->nranks_), task.stream);
}

void BufferRegistration::collectReleased() {
  registry_.collectGraphReleases();
  peerRegs_.noteRetired(registry_.takeRetired());
}

// Every rank (collective) or both ranks of every pair (point-to-point) is in an exchange, so every
// kernel launched before, eager or a replay enqueued so far, has its partners and finishes; after
// that nothing here uses the peers' released registrations.
ncclResult_t BufferRegistration::dropReleasedPeerMappings() {
  if (!peerRegs_.hasRetiredMappings()) return ncclSuccess;
  NCCLCHECK(ctx_.share->waitIdle({}));  // in a share group: the whole group's launched work
  peerRegs_.dropRetiredMappings();
  return ncclSuccess;
}

bool BufferRegistration::needsExchange(const std::vector<CollTask>& queue) const {
  const int nranks = ctx_.comm->nranks_;
  if (nranks == 1 || nranks > kMaxRegRanks) return false;
  if (collectives_.connected() && !collectives_.topology().allNvlinkP2p) return false;
  // Every eager operation asks: without local registrations that is one check per operation. An
  // operation below the zero-copy size takes the copy path however its buffers are registered, so
  // it costs no exchange (a registered 8-byte AllReduce took 15.6 us with one, 5.5-7.7 without, 4
  // H200).
  const bool local = paramInt(ParamId::kLocalRegister) != 0 && registry_.hasLocal();
  for (const CollTask& task : queue) {
    const bool registered = local && zeroCopySize(collBytes(task, nranks), task.stream) &&
                            (registry_.find(task.recvbuff, collRecvBytes(task, nranks)) != nullptr ||
                             registry_.find(task.sendbuff, collSendBytes(task, nranks)) != nullptr);
    if ((registered || graphRegisters(task)) && !onSymmetricWindows(task, ctx_.comm->windows_.get(), nranks)) {
      return true;
    }
  }
  return false;
}

// Called after the rings are connected (their model is known). Every rank that registered an operation's
// buffers (or captures it, with graph registration) computes the same eligibility, so the ranks
// that meet in the exchange agree on it.
ncclResult_t BufferRegistration::exchange(const std::vector<CollTask>& queue) {
  plans_.assign(queue.size(), RegisteredLaunch{});
  if (!collectives_.topology().allNvlinkP2p) return ncclSuccess;
  collectReleased();
  transport::Context ctx = collectives_.transportContext();
  const int nranks = ctx_.comm->nranks_;
  const bool local = paramInt(ParamId::kLocalRegister) != 0;
  for (size_t i = 0; i < queue.size(); i++) {
    const CollTask& task = queue[i];
    RegisteredLaunch& r = plans_[i];
    if (!zeroCopySize(collBytes(task, nranks), task.stream)) continue;  // the copy path (needsExchange)
    r.recv = local ? registry_.find(task.recvbuff, collRecvBytes(task, nranks)) : nullptr;
    r.send = local ? registry_.find(task.sendbuff, collSendBytes(task, nranks)) : nullptr;
    const bool graph = graphRegisters(task);
    if (r.recv == nullptr && r.send == nullptr && !graph) continue;
    if (onSymmetricWindows(task, ctx_.comm->windows_.get(), nranks)) {
      r.recv = r.send = nullptr;
      continue;
    }
    const bool peersRead = readsPeerSendBuffers(task.coll);
    // A rank that reads a peer's input premultiplies it with its own scalar: wrong for a PreMulSum
    // op, whose ranks each have their own. Those take the copy path.
    if (peersRead && hasUserOp(task)) {
      r.recv = r.send = nullptr;
      continue;
    }
    // Zero-copy is a way to run the Simple ring: only where the copy path's own plan is one (else
    // LL, LL128 or Direct is faster there), then fitted to the zero-copy model's channels (a plan
    // that is the Simple ring by construction).
    plan::Decision copy{};
    NCCLCHECK(collectives_.decide(task, /*zeroCopy=*/false, &copy));
    if (copy.algo != plan::kAlgoRing || copy.proto != kProtoSimple) continue;
    NCCLCHECK(collectives_.decide(task, /*zeroCopy=*/true, &r.decision));
    reg::Registration*& shared = peersRead ? r.send : r.recv;
    if (graph && shared == nullptr) {
      NCCLCHECK(registry_.acquireForGraph(sharedBuffer(task), sharedBytes(task, nranks), task.stream, &shared));
    }
    NCCLCHECK(
        peerRegs_.exchange(ctx, shared, sharedBuffer(task), peersRead, plan::collName(task.coll), &r.peers, &r.direct));
  }
  return dropReleasedPeerMappings();
}

std::vector<RegisteredLaunch> BufferRegistration::takePlans(size_t n) {
  std::vector<RegisteredLaunch> plans;
  plans.swap(plans_);
  plans.resize(n);  // no exchange ran: every operation takes the copy path
  return plans;
}

}  // namespace braid
