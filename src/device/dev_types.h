// The contract between the host and the device code: plain structs that a host compiler reads as
// well as nvcc. The transports fill the connection structs, launch/ fills DevComm and DevWork, and
// the kernels read them. Nothing here includes a CUDA header, so plan/ and topo/ can use the enums.
//
// Connection FIFO (one direction, one channel). The receiver owns the data buffers; the sender owns
// the head word. Each side sees both through mapped memory (peer GPU memory for P2P, pinned shared
// host memory for SHM):
//   - buffs[p]: kFifoSlots[p] slots of DevComm::slotBytes[p] bytes for protocol p, in the receiver's
//     memory; slot s % kFifoSlots[p] holds step s.
//   - tail: in the receiver's memory. The Simple sender stores the absolute number of the last step
//     it made complete (after a system-scope fence); the receiver polls it. LL and LL128 do not use
//     it: their flags travel with the data and hold (uint32_t)(step + 1).
//   - head: in the sender's memory. The receiver stores the absolute number of steps it has consumed
//     (for every protocol); the sender may fill step s of protocol p once s < head + kFifoSlots[p]
//     (every step up to s - kFifoSlots[p], the last one that used the slot, has been consumed).
//   - NET (another host): both ends' FIFOs are in their own pinned host memory, and a proxy thread on
//     each side (proxy/proxy.h) moves filled slots over the network: the sender's proxy follows its
//     tail (and the step sizes in DevSendConn::sizes) and advances its head once a slot is sent; the
//     receiver's proxy posts a receive per free slot and advances its tail as they land. Simple,
//     and LL when BRAID_NET_LL=1: an LL sender stores the step's size with kNetSizeLL before its
//     lines and never touches the tail; its proxy ships the LL slot, with an 8-byte trailer, once
//     every line carries the step's flag, and clears the size word before it advances head. The
//     receiving proxy, which received into the Simple slot of that step, copies the lines into the
//     LL slot, where the GPU polls their flags. A Simple step travels rounded up to 16 bytes, so
//     the size modulo 16 (8 or 0) tells the receiver which protocol a step was.
//   - step: the next step number, persisted across kernels by the kernel itself (written back to
//     DevComm at the end of each kernel). A communicator in a share group (splitShare, see
//     launch/shared_connections.h) keeps the step counters of its ring, direct and point-to-point
//     connections in device words the group owns, so that the communicators that share a
//     connection carry on one count: its `step` holds their address, and its kernels are told so
//     (DevWork::sharedSteps, DevP2pArgs::sharedSteps). headSeen, persisted the
//     same way, is a head value the sender read earlier: head only grows, so it stays a lower bound, and a sender
//     re-reads head (a memory round trip) only when headSeen no longer covers the step it wants to fill. Both sides
//     count the same steps for every operation, so head and tail stay meaningful across operations and protocols, which
//     is why they are absolute.
// Memory for buffs, tail and head starts zeroed; step starts at 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

constexpr int kMaxChannels = 32;

// Direct algorithms (device/coll/direct_ll.h) connect every rank to every other one, so they exist
// on communicators of at most kMaxDirectPeers + 1 ranks, with up to kMaxDirectChannels CTAs.
constexpr int kMaxDirectPeers = 7;
constexpr int kMaxDirectChannels = 16;

// NCCL's protocol numbering (NCCL_PROTO names LL, LL128, Simple).
enum ProtoId : int { kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2, kNumProtos = 3 };

// Slots per protocol FIFO. LL and LL128 forward line by line, so many small slots keep a sender
// ahead. Simple hands a slot on only when it is complete (one fence and flag round trip per step,
// ~2 us on NVLink), so it takes fewer, larger slots: 4 of 1 MiB with the default 4 MiB
// NCCL_BUFFSIZE. Measured on 4 H200: 1 MiB steps gave 2-5% more AllReduce bandwidth than 512 KiB.
// (Scalars for device code, which cannot read a host constexpr array; the array for host loops.)
constexpr int kFifoSlotsLL = 8;
constexpr int kFifoSlotsLL128 = 8;
constexpr int kFifoSlotsSimple = 4;
constexpr int kFifoSlots[kNumProtos] = {kFifoSlotsLL, kFifoSlotsLL128, kFifoSlotsSimple};
// NET: DevSendConn::sizes has a word per step modulo kNetSizeSlots, enough for the widest window of
// the protocols that cross the network (LL's); an LL step's word has kNetSizeLL set.
constexpr int kNetSizeSlots = kFifoSlotsLL;
constexpr uint32_t kNetSizeLL = 1u << 31;

// NCCL's ncclFunc_t order for the collectives that have kernels.
enum class CollId : uint8_t { kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4 };
constexpr int kNumColls = 5;

// The reduction the kernel applies. ncclAvg becomes kPreMulSum (floating types: inputs multiplied by
// 1/nranks, then summed) or kSumPostDiv (integer types: summed, then divided by nranks, truncating).
enum class DevRedOp : uint8_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kPreMulSum = 4, kSumPostDiv = 5 };

// Step tags (balanced point-to-point operations, device/prims/p2p_balanced.h): kFifoSlotsSimple
// words beside the tail, in the receiver's memory, where the sender stores which chunk of the
// operation step s carries (word s % kFifoSlotsSimple) before it posts the tail. Not on NET
// connections (the proxy ships payload only), where they are null.
constexpr uint64_t kStepTagEnd = ~0ull;  // the tag of a sender's last step of an operation: no payload

// Sender's view of one connection.
struct DevSendConn {
  char* buffs[kNumProtos];  // the receiver's FIFO buffers (remote for P2P)
  uint64_t* tail;           // in the receiver's memory; Simple only
  uint64_t* head;           // in this sender's memory; written by the receiver
  uint64_t step;            // next step to fill
  uint64_t headSeen;        // a head value read before (LL, LL128)
  // NET connections only (else null): kNetSizeSlots words in host memory where the sender stores
  // each step's payload bytes, for the proxy that ships the slot: Simple before it posts the tail,
  // LL (its lines' bytes | kNetSizeLL) before it writes the lines.
  uint32_t* sizes;
  uint64_t* stepTags;  // in the receiver's memory, beside tail (null on NET connections)
};

// Receiver's view of one connection.
struct DevRecvConn {
  char* buffs[kNumProtos];   // this receiver's FIFO buffers
  uint64_t* tail;            // in this receiver's memory; written by the sender
  uint64_t* head;            // in the sender's memory (remote for P2P)
  uint64_t step;             // next step to consume
  const uint64_t* stepTags;  // in this receiver's memory, beside tail (null on NET connections)
};

// A connection's step counters at a kernel's start and end: its own fields, or, when the kernel's
// communicator is in a share group (`shared`, the same for the whole kernel), the group's words
// {step, headSeen} at the address its `step` holds. A communicator of its own reads and writes the
// same fields as before sharing existed (a pointer in every connection cost small operations
// ~0.2 us, 2 H200).
#if defined(__CUDACC__)
struct SendSteps {
  uint64_t step;
  uint64_t headSeen;
};
__device__ __forceinline__ uint64_t* sharedStepWords(uint64_t stepField) {
  return reinterpret_cast<uint64_t*>(static_cast<uintptr_t>(stepField));
}
__device__ __forceinline__ SendSteps loadSendSteps(const DevSendConn* c, bool shared) {
  if (!shared) return SendSteps{c->step, c->headSeen};
  const uint64_t* words = sharedStepWords(c->step);
  return SendSteps{words[0], words[1]};
}
__device__ __forceinline__ uint64_t loadRecvStep(const DevRecvConn* c, bool shared) {
  return shared ? *sharedStepWords(c->step) : c->step;
}
__device__ __forceinline__ void storeSendSteps(DevSendConn* c, bool shared, uint64_t step, uint64_t headSeen) {
  uint64_t* words = shared ? sharedStepWords(c->step) : &c->step;
  words[0] = step;
  words[1] = headSeen;  // c->headSeen when not shared
}
__device__ __forceinline__ void storeRecvStep(DevRecvConn* c, bool shared, uint64_t step) {
  *(shared ? sharedStepWords(c->step) : &c->step) = step;
}
#endif
static_assert(offsetof(DevSendConn, headSeen) == offsetof(DevSendConn, step) + sizeof(uint64_t),
              "storeSendSteps: headSeen follows step, as in a share group's words");

// One channel: one ring, driven by one CTA.
struct DevChannel {
  const int* ringRanks;  // device array of nranks: the rank at each ring position
  int ringIndex;         // this rank's position: ringRanks[ringIndex] == rank
  DevSendConn send;      // to ringRanks[(ringIndex + 1) % nranks]
  DevRecvConn recv;      // from ringRanks[(ringIndex + nranks - 1) % nranks]
};

// One channel of the tree algorithm (communicators that span hosts; topo/trees.cc builds them): a
// chain through each host's GPUs under a binary tree of hosts. Each edge has a connection both
// ways: a rank sends partial sums up to its parent and receives results down from it (toParent,
// fromParent; unused at the root, parent < 0), and the reverse with each child. Only the LL and
// Simple buffers exist on these connections.
constexpr int kMaxTreeChildren = 3;  // the next GPU of the host's chain and two hosts below
struct DevTreeChannel {
  int parent;  // rank, or -1 at the root
  int nChildren;
  DevSendConn toParent;
  DevRecvConn fromParent;
  DevSendConn toChild[kMaxTreeChildren];
  DevRecvConn fromChild[kMaxTreeChildren];
};

// One CTA's connections to every peer, for the direct algorithms. Peer offset k (1..nranks-1):
// send[k - 1] goes to rank (rank + k) % nranks, recv[k - 1] comes from (rank + nranks - k) % nranks.
// LL buffers exist on these connections, and Simple ones of DevComm::directSlotBytes slots where
// every peer is on this host (a communicator with a NET direct peer runs the direct algorithms on
// LL only). A peer on another host is a NET connection (its
// sender announces each step's size to the proxy, as an LL ring step does): bit k - 1 of
// netSendMask is set for such a send[k - 1].
struct DevDirectChannel {
  DevSendConn send[kMaxDirectPeers];
  DevRecvConn recv[kMaxDirectPeers];
  uint32_t netSendMask;
};

// Per communicator, in device memory, written by the host when connections are made.
struct DevComm {
  int rank;
  int nranks;
  int nChannels;                   // channels connected (an operation may use fewer)
  uint32_t slotBytes[kNumProtos];  // bytes of one FIFO slot, flags included for LL and LL128
  volatile int* abortFlag;         // host-mapped; nonzero means every wait loop exits
  DevChannel channels[kMaxChannels];
  int nDirectChannels;  // 0 when the direct algorithms are not available
  // Bytes of one Simple FIFO slot of the direct connections (0: they have none; LL only).
  uint32_t directSlotBytes;
  DevDirectChannel direct[kMaxDirectChannels];
  int nTreeChannels;  // 0 when the tree algorithm is not available (one host)
  DevTreeChannel tree[kMaxChannels];
  // Collectives captured in a CUDA graph: a replay runs its kernels without any of Braid's host
  // code, so the GPU numbers them itself: CTA 0 of every captured kernel adds one as it begins
  // (fire and forget), so graph op n is the n-th captured collective kernel of the communicator
  // this GPU began. Read only when a wait is noted (DevWaitNotes). Zeroed when connections are made.
  uint64_t graphOpsBegun;
};

constexpr int kMaxP2pKernelCtas = 128;  // DevP2pArgsLarge::kMaxCtas

// Hang diagnosis of collectives and point-to-point kernels (watch/wait_notes.h) without a store to
// host memory on the fast path: a kernel that stores to host memory at all takes ~0.9 us longer to
// end (2 H200, AllReduce of 8 B: 5.9 us without, 6.8 with one or many such stores, whatever the
// store's kind), so a collective kernel notes nothing unless one of its threads has waited long:
// from the second read of the abort flag in one operation on (2 x kAbortPollSpins spins,
// milliseconds), every such read also notes which op CTA b is waiting in (an eager one: its seq; a
// captured one: its graph op and capture) and a fresh beat (%globaltimer). Beats that move between
// two looks mean CTA b is waiting now. A point-to-point kernel has up to kMaxP2pKernelCtas CTAs:
// CTA b notes in slot b % kMaxChannels, which CTAs of the same kernel share (they wait in the same
// op).
struct DevWaitNotes {
  uint64_t beat[kMaxChannels];
  uint64_t op[kMaxChannels];
  uint64_t capture[kMaxChannels];
};

// How a kernel moves the data: around the channels' rings, straight to every peer, or up and down
// the channels' trees (AllReduce, LL or Simple).
enum class DevAlgo : uint8_t { kRing = 0, kDirect = 1, kTree = 2 };

// The buffers of a collective whose send and receive buffers lie in NCCL_WIN_COLL_SYMMETRIC
// windows that every rank of the communicator maps: rank q's copy of the send buffer is at
// send + q * sendStride in this process (and of the receive buffer at recv + q * recvStride), so a
// kernel loads and stores its peers' buffers themselves (coll/symmetric_colls.h).
struct DevSymmetric {
  const char* send;
  char* recv;
  uint64_t sendStride;
  uint64_t recvStride;
};

// One collective. Counts are in elements of dtype.
struct DevWork {
  const void* sendbuff;
  void* recvbuff;
  uint64_t count;         // AllReduce, Broadcast, Reduce: all elements; AllGather: sendcount; ReduceScatter: recvcount
  uint64_t scalar;        // kPreMulSum: the factor as bits of dtype (fp8: bits of a half); kSumPostDiv: the divisor
  const void* scalarPtr;  // kPreMulSum of a ncclScalarDevice scalar: one dtype element, read at kernel start
  int32_t root;           // Broadcast and Reduce
  uint8_t coll;           // CollId
  uint8_t dtype;          // ncclDataType_t
  uint8_t redOp;          // DevRedOp
  uint8_t proto;          // ProtoId
  uint8_t algo;           // DevAlgo (kDirect: LL, or Simple where DevComm::directSlotBytes; kTree:
                          // AllReduce with LL or Simple)
  uint8_t captured;       // 1: captured in a CUDA graph (seq is its capture number)
  uint8_t sharedSteps;    // 1: the connections' steps are a share group's words (see DevSendConn)
  uint8_t twoShot;        // kDirect AllReduce on Simple: reduce-scatter then all-gather (else one hop)
  uint8_t symmetric;      // kDirect on Simple: on the peers' buffers themselves (`sym`), not the FIFOs
  uint8_t pad[3];
  int32_t nChannels;        // CTAs launched; CTA b drives channels[b] (ring), direct[b] or tree[b]
  uint32_t chunkBytes;      // payload bytes moved per step per connection (<= a slot's payload)
  uint64_t seq;             // the collective's sequence number on its communicator (captured: its capture
                            // number); 0: not counted
  DevWaitNotes* waitNotes;  // host-mapped; where its long waits are noted (null: no progress board)
  DevSymmetric sym;         // symmetric: every rank's buffers
};

// Point-to-point (ncclSend/ncclRecv): a rank's connections to one peer, made the first time the two
// exchange data, with Simple buffers only. Channel c: send[c] goes to the peer, recv[c] comes from
// it. An operation of B bytes uses channels 0..p2pChannels(B)-1, split as both ends compute it.
constexpr int kMaxP2pChannels = 32;
struct DevP2pPeer {
  DevSendConn send[kMaxP2pChannels];
  DevRecvConn recv[kMaxP2pChannels];
};

// One CTA of a point-to-point kernel: one connection (send xor recv) and its segments, in the order
// the operations were issued. A segment is one operation's part on that channel. A self-copy CTA
// (no connection) copies self sends into their receives: each segment's direct into its buff.
// 16 bytes, so that the medium work list holds a pair's 32 channels both ways and the self copies.
//
// kP2pGuarded (with kP2pSend or kP2pRecv): an in-place AlltoAll's send to a peer and its receive
// from that peer, on the same range, channel by channel without staging. The receive CTA starts
// its segment once the send CTA of the same channel has read all of its own (the segment's ticket
// names their word in DevP2pArgs::guards); since every part fits the send's FIFO, that send never
// waits for the peer (launch/p2p_stage.cc).
enum DevP2pRole : int16_t { kP2pSelfCopy = 0, kP2pSend = 1, kP2pRecv = 2, kP2pRoleMask = 3, kP2pGuarded = 4 };
struct DevP2pCta {
  void* conn;  // DevSendConn* (kP2pSend), DevRecvConn* (kP2pRecv), null (kP2pSelfCopy)
  int32_t firstSeg;
  int16_t nSegs;
  int16_t role;  // DevP2pRole, with kP2pGuarded
};
static_assert(sizeof(DevP2pCta) == 16, "a point-to-point CTA's entry of the work list");
// direct (registered buffers): a send's destination in the peer's receive buffer, or, on the
// receiving side, buff itself (the peer writes it); null for the FIFO path.
// balancedPages (nonzero: a balanced operation, device/prims/p2p_balanced.h): the segment is the
// whole operation, shared by its `ctas` CTAs in chunks of balancedPages x kP2pBalancedPage bytes
// that the sending CTAs take from DevP2pArgs::tickets[ticket]. A guarded segment (DevP2pCta):
// ticket is its word in DevP2pArgs::guards.
constexpr uint64_t kP2pBalancedPage = 4096;
struct DevP2pSeg {
  char* buff;
  char* direct;
  uint64_t bytes;
  uint32_t ticket;
  uint16_t balancedPages;
  uint16_t ctas;
};

// The kernel's whole work list travels in its parameters (no device memory to manage per launch):
// a small variant for the usual few operations, whose parameters cost little to launch, a medium
// one within 4 KiB (one peer both ways on all 32 channels with the self copies, or several small
// operations), and a large one (about 30 KiB, within CUDA's 32 KiB parameter limit) for big groups.
// Parameters over 4 KiB cost every eager launch: 2 H200, sendrecv of 1 MiB (32 channels each way)
// took 21.5 us on the large variant against 15.4 for NVIDIA NCCL, and an all-to-all of 2 MiB 22.0
// against 15.4 (braid-perf -p -N 2, 2026-11-29); captured in a graph, 14.4 us.
template <int kCtas, int kSegs>
struct DevP2pArgs {
  static constexpr int kMaxCtas = kCtas;
  static constexpr int kMaxSegs = kSegs;
  const volatile int* abortFlag;
  uint64_t slotBytes;  // Simple slot of the point-to-point connections; every step but an operation's last is full
  int32_t nCtas;
  int32_t sharedSteps;  // 1: the connections' steps are a share group's words (see DevSendConn)
  // Hang diagnosis (watch/p2p_progress.h): where its CTAs note their long waits, as in launch seq
  // (host-mapped; null when seq is 0).
  DevWaitNotes* waitNotes;
  uint64_t seq;
  // The communicator's counters of balanced operations (zero between operations: the CTA whose
  // take is an operation's last zeroes its counter).
  uint64_t* tickets;
  // The communicator's in-place guards, kMaxP2pChannels per peer (zero between operations: the
  // receive CTA zeroes the word it waited for).
  uint64_t* guards;
  DevP2pCta ctas[kCtas];
  DevP2pSeg segs[kSegs];
};
using DevP2pArgsSmall = DevP2pArgs<16, 32>;
using DevP2pArgsMedium = DevP2pArgs<72, 88>;
using DevP2pArgsLarge = DevP2pArgs<kMaxP2pKernelCtas, 896>;
static_assert(sizeof(DevP2pArgsMedium) <= 4096, "the medium variant stays within 4 KiB of parameters");
static_assert(sizeof(DevP2pArgsLarge) <= 32764, "a kernel's parameters are limited to 32764 bytes");

struct DevKernelArgs {
  DevComm* comm;  // device pointer
  DevWork work;
};

// Registered buffers (zero-copy rings, Simple only): every rank's shared buffer of the operation,
// mapped into this process, indexed by rank.
//   - Write-direct (AllReduce, AllGather, Broadcast): the receive buffers. A ring's send writes
//     straight into the next rank's receive buffer at the offset the data has there, where a FIFO
//     slot would otherwise hold it (AllReduce: its all-gather half); the receiver finds it in place.
//   - Read-direct (ReduceScatter, Reduce): the send buffers. The first hop of each chunk is read by
//     the next rank straight from the previous rank's send buffer instead of being copied into the
//     FIFO (on two ranks that is the whole operation: nothing is staged).
constexpr int kMaxRegRanks = kMaxDirectPeers + 1;
#if defined(__CUDACC__)
#define BRAID_DEV_TYPES_HD __host__ __device__
#else
#define BRAID_DEV_TYPES_HD
#endif
// Whether a zero-copy collective reads the peers' send buffers (else it writes into their receive
// buffers). For the host and the kernels alike.
BRAID_DEV_TYPES_HD constexpr bool readsPeerSendBuffers(CollId coll) {
  return coll == CollId::kReduceScatter || coll == CollId::kReduce;
}
// Whether the collective takes a reduction op (AllReduce, Reduce, ReduceScatter); a root
// (Broadcast, Reduce).
BRAID_DEV_TYPES_HD constexpr bool collUsesOp(CollId coll) {
  return coll == CollId::kReduce || coll == CollId::kAllReduce || coll == CollId::kReduceScatter;
}
BRAID_DEV_TYPES_HD constexpr bool collUsesRoot(CollId coll) {
  return coll == CollId::kReduce || coll == CollId::kBroadcast;
}
struct DevRegPeers {
  char* buff[kMaxRegRanks];
};

// The Simple kernel's parameters: the work, and the peers' registered buffers when `direct` is set.
struct DevSimpleArgs {
  DevKernelArgs core;
  DevRegPeers peers;
  int32_t direct;
};

}  // namespace braid
