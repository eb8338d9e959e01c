// The point-to-point kernel (ncclSend/ncclRecv): each CTA moves one connection's segments, in
// issue order, with the Simple protocol (prims/prims_simple.h: nThreads workers plus a poster
// warp). Sends and receives run on separate CTAs, so a group's operations progress together
// whatever their order, and a full FIFO towards one peer never stalls the traffic of another.
//
// Both ends split a segment into the same steps: full slots (DevP2pArgs::slotBytes, equal on both
// sides because the connection's FIFO sizes were checked at connect) and the remainder last. A
// zero-copy segment (registered receive buffer, DevP2pSeg::direct) is two steps on both ends: the
// kStepEnter handshake, then the whole part written straight into the receiver's buffer. A
// balanced segment (DevP2pSeg::balancedPages) is a whole operation whose chunks the CTAs of its
// channels take as they go (prims/p2p_balanced.h).
#include "device/kernels.h"
#include "device/launch_kernel.h"
#include "device/prims/p2p_balanced.h"
#include "device/prims/prims_simple.h"

static_assert(braid::kMaxSimpleP2pWorkers <= braid::kMaxSimpleWorkers, "the Simple kernels keep their register budget");

namespace braid {
namespace {

// In place (kP2pGuarded, see DevP2pCta): the receive waits until the send of its channel has read
// the range, then zeroes the word for the next operation; the send raises it once its workers
// have copied the range out (every worker passed the step's last barrier).
__device__ void awaitGuard(ProtoState& s, uint64_t* guard) {
  if (s.tid == 0) {
    while (ldAcquireGpu(guard) == 0) {
      if (s.abort.poll()) break;
    }
    *reinterpret_cast<volatile uint64_t*>(guard) = 0;
  }
  namedBarrierSync(kSimpleBarrier, s.nthreads);
}
__device__ void raiseGuard(const ProtoState& s, uint64_t* guard) {
  if (s.tid == 0) stReleaseGpu(guard, 1);
}

// kBalanced: the launch has balanced segments. A separate kernel, because the balanced path's calls
// cost the kernel a larger stack frame and spills (176 bytes of stack became 584), and small
// operations ~0.7 us each (2 H200, sendrecv and alltoall of 8 B-32 KiB); balanced launches are
// large.
template <typename Args, bool kBalanced>
__global__ void __launch_bounds__(kMaxSimpleP2pWorkers + kSimpleExtraThreads, 1) p2pKernel(const Args args) {
  __shared__ PrimsShared shared;
  waitForPreviousKernel();
  const DevP2pCta cta = args.ctas[blockIdx.x];
  notePeerOpsStarted(args.waitNotes, args.seq, &shared);
  const int role = cta.role & kP2pRoleMask;
  const bool guarded = (cta.role & kP2pGuarded) != 0;
  if (role == kP2pSelfCopy) {
    // A self copy (see DevP2pCta): every thread copies, nobody is waited for.
    for (int i = 0; i < cta.nSegs; i++) {
      const DevP2pSeg seg = args.segs[cta.firstSeg + i];
      simpleReduceCopy<uint8_t, FuncSum<uint8_t>>(
          FuncSum<uint8_t>(0), static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), nullptr,
          reinterpret_cast<const uint8_t*>(seg.direct), reinterpret_cast<uint8_t*>(seg.buff), nullptr,
          static_cast<int64_t>(seg.bytes), false, false, false);
    }
    return;
  }
  DevSendConn* send = role == kP2pSend ? static_cast<DevSendConn*>(cta.conn) : nullptr;
  DevRecvConn* recv = role == kP2pRecv ? static_cast<DevRecvConn*>(cta.conn) : nullptr;
  const int nWorkers = static_cast<int>(blockDim.x) - kSimpleExtraThreads;
  const bool sharedSteps = args.sharedSteps != 0;
  if (!simpleCtaStart(args.abortFlag, send, recv, &shared, nWorkers, sharedSteps)) return;
  const int tid = static_cast<int>(threadIdx.x);
  ProtoState state =
      makeConnState(send, recv, args.abortFlag, &shared, tid, nWorkers, kProtoSimple, args.slotBytes, 0, sharedSteps);
  const int64_t chunk = static_cast<int64_t>(args.slotBytes);
  const int flags = send != nullptr ? kStepSend : kStepRecv;
  for (int i = 0; i < cta.nSegs; i++) {
    const DevP2pSeg seg = args.segs[cta.firstSeg + i];
    if (seg.direct != nullptr) {
      // Zero-copy: once the receiver is in (its buffer is the operation's), the sender writes the
      // whole part into it as one step, which the receiver only waits for.
      simpleStep<uint8_t, FuncSum<uint8_t>>(state, nullptr, nullptr, 1, kStepEnter);
      const int direct = flags == kStepSend ? kStepDirectSend : kStepDirectRecv;
      simpleStep<uint8_t, FuncSum<uint8_t>>(state, flags == kStepSend ? seg.buff : nullptr, seg.direct,
                                            static_cast<int64_t>(seg.bytes), flags | direct);
      continue;
    }
    if (kBalanced && seg.balancedPages != 0) {
      const uint64_t chunk = seg.balancedPages * kP2pBalancedPage;
      if (flags == kStepSend) {
        balancedSend(state, seg.buff, seg.bytes, chunk, args.tickets + seg.ticket, seg.ctas);
      } else {
        balancedRecv(state, seg.buff, seg.bytes, chunk);
      }
      continue;
    }
    if (guarded && flags == kStepRecv) awaitGuard(state, args.guards + seg.ticket);
    for (int64_t o = 0; o < static_cast<int64_t>(seg.bytes); o += chunk) {
      const int64_t n = static_cast<int64_t>(seg.bytes) - o < chunk ? static_cast<int64_t>(seg.bytes) - o : chunk;
      char* p = seg.buff + o;
      simpleStep<uint8_t, FuncSum<uint8_t>>(state, flags == kStepSend ? p : nullptr, flags == kStepRecv ? p : nullptr,
                                            n, flags);
    }
    if (guarded && flags == kStepSend) raiseGuard(state, args.guards + seg.ticket);
  }
  finishProtoState(state);
  // After the steps were written back (same thread): lets the poster post the last step and exit.
  if (tid == 0) stReleaseCta(&shared.finished, 1);
}

// Both variants (balanced or not) of the kernel of one argument size.
template <typename Args>
cudaError_t loadP2pVariants(KernelArch* arch) {
  const cudaError_t err = loadKernel(p2pKernel<Args, true>, arch);
  return err != cudaSuccess ? err : loadKernel(p2pKernel<Args, false>, arch);
}

template <typename Args>
cudaError_t launchP2p(const Args& args, int nThreads, bool balanced, const LaunchOptions& launch, cudaStream_t stream) {
  if (args.nCtas <= 0 || args.nCtas > Args::kMaxCtas || nThreads < 32 || nThreads % 32 != 0 ||
      nThreads > kMaxSimpleP2pWorkers || args.slotBytes == 0 || args.slotBytes % 16 != 0) {
    return cudaErrorInvalidValue;
  }
  const int threads = nThreads + kSimpleExtraThreads;
  if (balanced) return launchWithConfig(p2pKernel<Args, true>, args.nCtas, threads, launch, stream, args);
  return launchWithConfig(p2pKernel<Args, false>, args.nCtas, threads, launch, stream, args);
}

}  // namespace

cudaError_t loadP2pKernels(KernelArch* arch) {
  return loadAll(
      {loadP2pVariants<DevP2pArgsSmall>, loadP2pVariants<DevP2pArgsMedium>, loadP2pVariants<DevP2pArgsLarge>}, arch);
}

cudaError_t launchP2pKernel(const DevP2pArgsSmall& args, int nThreads, bool balanced, const LaunchOptions& launch,
                            cudaStream_t stream) {
  return launchP2p(args, nThreads, balanced, launch, stream);
}

cudaError_t launchP2pKernel(const DevP2pArgsMedium& args, int nThreads, bool balanced, const LaunchOptions& launch,
                            cudaStream_t stream) {
  return launchP2p(args, nThreads, balanced, launch, stream);
}

cudaError_t launchP2pKernel(const DevP2pArgsLarge& args, int nThreads, bool balanced, const LaunchOptions& launch,
                            cudaStream_t stream) {
  return launchP2p(args, nThreads, balanced, launch, stream);
}

}  // namespace braid
