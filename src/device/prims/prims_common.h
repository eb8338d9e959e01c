// What the three protocols (prims_simple.h, prims_ll.h, prims_ll128.h) share: the step flags, the
// per-CTA setup, abort polling, and 8-byte pack loads/stores for user buffers of any alignment.
//
// The protocol interface the ring algorithms (coll/ring_colls.h) are written against is one step
// function per protocol and (T, Fn), called through a pointer (StepFn) so that the algorithms are
// compiled once per protocol, not once per type and op:
//   void xxxStep<T, Fn>(ProtoState&, const char* src, char* dst, int64_t nelem, int flags);
// It does one ring step (see StepFlags) on nelem elements of T, the functor built from
// ProtoState::scalar. A step with nelem <= 0 does nothing and is not counted, on either side of a
// connection: both sides compute the same sizes for the same chunk, so their step counts stay equal.
#pragma once

#include <cstdint>

#include "device/arch/ptx.h"
#include "device/dev_types.h"
#include "device/reduce/reduce_ops.h"

namespace braid {

// What one step does. The value is
//   v = kRecv && src ? reduce(fifo, pre(src)) : (kRecv ? fifo : pre(src));  v = post(v)
// and v goes to dst (when non-null) and to the next rank's FIFO (kSend). pre() is the functor's
// preOp when kPreOp is set, post() its postOp when kPostOp is set.
//
// Registered buffers (Simple only, see DevRegPeers): with kDirectSend the send goes to dst +
// ProtoState::directDelta, the same offset in the next rank's receive buffer, instead of its FIFO
// (no slot, so no wait for the receiver's head); with kDirectRecv the received data is already at
// dst (written there by the previous rank) and is read from there. kEnter is the handshake a
// direct operation starts with: the rank announces it has entered the operation (its receive
// buffer is the operation's from now on) and waits until the next rank has done the same, so that
// no direct write lands in a buffer its owner may still be using for earlier work. A
// point-to-point send has no buffer of its own to write: it passes the peer's buffer as dst with
// directDelta 0, and dst is written once.
//
// Read-direct (registered send buffers): with kReadSend the step's data stays where it is (src, in
// this rank's registered send buffer) and the step is only published; with kReadRecv the received
// data is read at src + directDelta, the same offset in the previous rank's send buffer, and the
// step's preOp applies to it as well (the sender did not apply it). kDrain, at the end of a
// read-direct operation, waits until the next rank has consumed every step sent to it, so that no
// read of our send buffer is still pending when the kernel ends and the user may overwrite it.
enum StepFlags : int {
  kStepRecv = 1,
  kStepSend = 2,
  kStepPreOp = 4,
  kStepPostOp = 8,
  kStepDirectSend = 16,
  kStepDirectRecv = 32,
  kStepEnter = 64,
  kStepReadSend = 128,
  kStepReadRecv = 256,
  kStepDrain = 512,
};

// Spin iterations between two reads of the host-mapped abort flag (a PCIe round trip).
constexpr uint32_t kAbortPollSpins = 4096;

// Per-CTA shared state. Simple uses the counters to hand completed steps to its poster warp.
struct PrimsShared {
  uint64_t sendDone;  // absolute number of send steps whose payload is written
  uint64_t recvDone;  // absolute number of receive steps whose payload is consumed
  uint64_t finished;  // nonzero once the workers have finished the operation
  uint64_t stepTag;   // balanced point-to-point steps: worker 0 passes the step's tag to the others
  int aborted;        // set by the first thread that sees the abort flag
  // Where AbortWatch notes a long wait (null: not noted), and what it notes: the op number read
  // from *waitOp (a captured operation: DevComm::graphOpsBegun; an eager one: &waitCapture, its
  // seq) and waitCapture.
  DevWaitNotes* waitNotes;
  const uint64_t* waitOp;
  uint64_t waitCapture;
};

// A thread that has spun 2 x kAbortPollSpins times in one operation notes it at every later read of
// the abort flag (DevWaitNotes). Inlined: a call in every wait loop made the LL kernels spill
// around it.
__device__ __forceinline__ void noteLongWait(const PrimsShared* shared) {
  DevWaitNotes* notes = shared->waitNotes;
  if (notes == nullptr) return;
  const unsigned b = blockIdx.x % kMaxChannels;  // point-to-point kernels have more CTAs (DevWaitNotes)
  stRelaxedSys(&notes->op[b], *reinterpret_cast<const volatile uint64_t*>(shared->waitOp));
  stRelaxedSys(&notes->capture[b], shared->waitCapture);
  stRelaxedSys(&notes->beat[b], globalTimerNs());
}

// Abort polling for one thread: cheap shared-memory check every call, the host flag every
// kAbortPollSpins calls (and a long wait's note, see noteLongWait). Returns true once the operation
// is aborted.
class AbortWatch {
 public:
  __device__ AbortWatch(const volatile int* hostFlag, PrimsShared* shared) : hostFlag_(hostFlag), shared_(shared) {}
  __device__ bool aborted() const { return *reinterpret_cast<volatile int*>(&shared_->aborted) != 0; }
  __device__ bool poll() {
    if (aborted()) return true;
    if (++spins_ % kAbortPollSpins != 0) return false;
    if (spins_ >= 2 * kAbortPollSpins) noteLongWait(shared_);
    if (hostFlag_ == nullptr || readAbort(hostFlag_) == 0) return false;
    *reinterpret_cast<volatile int*>(&shared_->aborted) = 1;
    return true;
  }

 private:
  const volatile int* hostFlag_;
  PrimsShared* shared_;
  uint32_t spins_ = 0;
};

// One CTA thread's view of its connections, the same for every protocol and type: a ring channel's
// pair, or one direction of a point-to-point connection (the other pointer null).
struct ProtoState {
  DevSendConn* sendConn;
  DevRecvConn* recvConn;
  PrimsShared* shared;
  int tid;       // index among the threads that run the algorithm
  int nthreads;  // number of those threads (a multiple of 32)
  uint64_t slotBytes;
  char* sendBuff;  // the receiver's FIFO for this protocol
  const char* recvBuff;
  const uint64_t* sendHead;
  uint64_t* recvHead;
  const uint64_t* recvTail;
  uint64_t sendStep;
  uint64_t recvStep;
  uint64_t headCache;  // last head value seen by this thread (LL, LL128)
  uint64_t scalar;     // DevWork::scalar, for the functor
  AbortWatch abort;
  // The registered peer buffer minus ours (0 without registration): kStepDirectSend, the next rank's
  // receive buffer minus ours; kStepReadRecv, the previous rank's send buffer minus ours.
  intptr_t directDelta;
  uint32_t* sendSizes;  // DevSendConn::sizes (NET connections; else null)
  // Simple: worker 0 publishes each step's tail / head itself instead of the poster warp, whose
  // connections are fixed for the kernel (the tree algorithm moves between connections).
  bool postInline;
  bool sharedSteps;  // the connections' steps are a share group's words (dev_types.h)
};

using StepFn = void (*)(ProtoState&, const char* src, char* dst, int64_t nelem, int flags);

// Either connection may be null (point-to-point CTAs move one direction).
__device__ __forceinline__ ProtoState makeConnState(DevSendConn* send, DevRecvConn* recv, const volatile int* abortFlag,
                                                    PrimsShared* shared, int tid, int nthreads, int proto,
                                                    uint64_t slotBytes, uint64_t scalar, bool sharedSteps) {
  const SendSteps sendSteps = send != nullptr ? loadSendSteps(send, sharedSteps) : SendSteps{0, 0};
  return ProtoState{send,
                    recv,
                    shared,
                    tid,
                    nthreads,
                    slotBytes,
                    send != nullptr ? send->buffs[proto] : nullptr,
                    recv != nullptr ? recv->buffs[proto] : nullptr,
                    send != nullptr ? send->head : nullptr,
                    recv != nullptr ? recv->head : nullptr,
                    recv != nullptr ? recv->tail : nullptr,
                    sendSteps.step,
                    recv != nullptr ? loadRecvStep(recv, sharedSteps) : 0,
                    sendSteps.headSeen,
                    scalar,
                    AbortWatch(abortFlag, shared),
                    0,
                    send != nullptr ? send->sizes : nullptr,
                    false,
                    sharedSteps};
}

// This CTA's ring channel (comm->channels[blockIdx.x]).
__device__ __forceinline__ ProtoState makeProtoState(DevComm* comm, PrimsShared* shared, int tid, int nthreads,
                                                     int proto, uint64_t scalar, bool sharedSteps) {
  DevChannel* ch = &comm->channels[blockIdx.x];
  return makeConnState(&ch->send, &ch->recv, comm->abortFlag, shared, tid, nthreads, proto, comm->slotBytes[proto],
                       scalar, sharedSteps);
}

// Steps go back to the connections for the next kernel (every thread counted the same steps).
__device__ __forceinline__ void finishProtoState(const ProtoState& s) {
  if (s.tid != 0) return;
  if (s.sendConn != nullptr) storeSendSteps(s.sendConn, s.sharedSteps, s.sendStep, s.headCache);
  if (s.recvConn != nullptr) storeRecvStep(s.recvConn, s.sharedSteps, s.recvStep);
}

__device__ __forceinline__ int64_t divUp(int64_t a, int64_t b) { return (a + b - 1) / b; }
__device__ __forceinline__ int64_t roundUp(int64_t a, int64_t b) { return divUp(a, b) * b; }

// Payload bytes per step: the request capped at the slot's payload, in 16-byte units (so that every
// chunk offset keeps the user buffer's 16-byte alignment), 0 meaning the whole slot.
__device__ __forceinline__ int64_t clampChunkBytes(int64_t capacity, uint32_t requested) {
  int64_t c = requested == 0 ? capacity : (requested < capacity ? static_cast<int64_t>(requested) : capacity);
  c = c / 16 * 16;
  return c < 16 ? 16 : c;
}

// The unsigned integer of a type's size: partial packs move elements as raw bits.
template <int kBytes>
using UintOfSize = reduce_detail::UintOfSize<kBytes>;

// Whether p may take loadPack8 / storePack8's 8-byte fast path.
__device__ __forceinline__ bool aligned8(const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; }

// Loads `nbytes` (0..8, a multiple of sizeof(T)) bytes of T elements at p into the low bytes of a
// pack. p is aligned to sizeof(T); the fast path needs 8-byte alignment and a full pack.
template <typename T>
__device__ __forceinline__ uint64_t loadPack8(const char* p, int nbytes, bool aligned8) {
  if (aligned8 && nbytes == 8) return *reinterpret_cast<const uint64_t*>(p);
  using U = typename UintOfSize<sizeof(T)>::Type;
  constexpr int kElems = 8 / sizeof(T);
  const U* src = reinterpret_cast<const U*>(p);
  uint64_t v = 0;
#pragma unroll
  for (int i = 0; i < kElems; i++) {
    if (i * static_cast<int>(sizeof(T)) < nbytes) v |= static_cast<uint64_t>(src[i]) << (8 * sizeof(T) * i);
  }
  return v;
}

template <typename T>
__device__ __forceinline__ void storePack8(char* p, uint64_t v, int nbytes, bool aligned8) {
  if (aligned8 && nbytes == 8) {
    *reinterpret_cast<uint64_t*>(p) = v;
    return;
  }
  using U = typename UintOfSize<sizeof(T)>::Type;
  constexpr int kElems = 8 / sizeof(T);
  U* dst = reinterpret_cast<U*>(p);
#pragma unroll
  for (int i = 0; i < kElems; i++) {
    if (i * static_cast<int>(sizeof(T)) < nbytes) dst[i] = static_cast<U>(v >> (8 * sizeof(T) * i));
  }
}

}  // namespace braid
