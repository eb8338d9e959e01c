// The per-operation launch decision: which algorithm and protocol, how many channels (CTAs) and
// threads, and how many payload bytes per ring step, from a cost model in NCCL's shape
// (time = latency + bytes / bandwidth), filtered by NCCL_ALGO / NCCL_PROTO.
//
// Pure host logic with no CUDA calls and no communicator: the caller describes the communicator in
// a CommModel (from topo and the parameters) and gets a Decision back. Thread safe: nothing here
// keeps state except the one-time WARNs about invalid NCCL_NTHREADS / NCCL_LL128_NTHREADS values.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "device/dev_types.h"

namespace braid::plan {

// NCCL's algorithm numbering (NCCL_ALGO names), then Braid's own: Direct, every rank writing
// straight to every peer (one hop; device/coll/direct_colls.h). Braid implements Ring, Direct and
// (AllReduce across hosts) Tree.
enum AlgoId : int {
  kAlgoTree = 0,
  kAlgoRing = 1,
  kAlgoCollNetDirect = 2,
  kAlgoCollNetChain = 3,
  kAlgoNvls = 4,
  kAlgoNvlsTree = 5,
  kAlgoPat = 6,
  kAlgoDirect = 7,
  kNumAlgos = 8
};

// What NCCL_ALGO and NCCL_PROTO allow, per collective: true = allowed.
struct Filter {
  bool algo[kNumColls][kNumAlgos];
  bool proto[kNumColls][kNumProtos];
  bool algoNamed[kNumColls];  // NCCL_ALGO has an entry for the collective (or one for all of them)
};

// Parses both variables with NCCL 2.24+ syntax ("" or nullptr = everything allowed):
//   "[func:]list[;func:list...]"  only the first entry may omit "func:" (it then applies to every
//   collective); a later entry replaces the list of the collective it names. A list is
//   comma-separated names; a leading '^' means "everything except these". Names are
//   case-insensitive: funcs Broadcast, Reduce, AllGather, ReduceScatter, AllReduce; algos Tree,
//   Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT, Direct; protos LL, LL128, Simple.
//   Whitespace around tokens is ignored, and so are empty entries (";;", a trailing ';').
//   As in NCCL 2.31 and later, once NCCL_ALGO has any entry, a collective that no entry covers has no
//   algorithm at all ("allreduce:tree" leaves Broadcast none, and Broadcast then fails with
//   ncclInvalidUsage and a WARN saying why); NCCL_PROTO keeps the older rule (unnamed: every protocol).
//   One WARN at parse time names the NCCL_ALGO string and every collective it leaves without an
//   algorithm Braid has.
// A malformed string or an unknown name: one WARN naming the variable and the bad token, and
// ncclInvalidArgument; *out is written only on success.
[[nodiscard]] ncclResult_t parseFilter(const char* algoEnv, const char* protoEnv, Filter* out);

// Whether the filter leaves AllReduce Tree and none of Braid's other algorithms (Ring, Direct): the
// one case where a communicator on one host builds trees (topo's singleHostTrees).
bool onlyTreeForAllReduce(const Filter& filter);

// Per communicator, filled by the caller from topo and the parameters.
struct CommModel {
  int nranks;
  int nNodes;                            // hosts among the ranks (topo)
  int maxChannels;                       // channels connected (topo's nChannels), 1..kMaxChannels
  int maxDirectChannels;                 // direct channels connected, 0..kMaxDirectChannels (0: no Direct)
  uint32_t directSimpleSlotBytes;        // Simple slot of the direct connections (0: Direct runs LL only)
  int directAllReduceHops;               // Direct/Simple AllReduce: 1 one-shot only, 2 two-shot only, 0 by cost
  int symmetricCtas;                     // CTAs of the symmetric kernels (NCCL_SYM_CTAS); 0: by size
  double bwPerChannelGBps;               // topo: model bandwidth of one channel
  double hopLatencyUs[kNumProtos];       // topo: per-hop latency by protocol (see tuning_constants.h)
  double localHopLatencyUs[kNumProtos];  // topo: the same for a hop inside a host (tree edges)
  int nTreeChannels;                     // tree channels connected (0: no Tree; one host)
  int treeNetDepth;                      // topo: NET edges / edges inside hosts on a tree's deepest path
  int treeLocalDepth;
  bool ll128Ok;                           // LL128 allowed on every hop
  bool llOk;                              // LL allowed on every hop (no NET hop, or BRAID_NET_LL)
  uint32_t slotPayloadBytes[kNumProtos];  // payload of one FIFO slot: Simple slotBytes, LL slotBytes/2,
                                          // LL128 slotBytes*120/128
  int nthreadsOverride;                   // NCCL_NTHREADS or -1 (<= 0: automatic)
  int ll128NthreadsOverride;              // NCCL_LL128_NTHREADS or -1 (<= 0: automatic)
  // The operation's op is a ncclRedOpCreatePreMulSum op: no Direct, whose receiving rank would
  // premultiply its peers' inputs with its own scalar (every rank has its own).
  bool userPreMulSum;
  // ncclConfig_t.cgaClusterSize after NCCL_CGA_CLUSTER_SIZE (0-8), or kAutoClusterSize: the planner
  // picks (Decision::clusterSize).
  int cgaClusterSize;
};

constexpr int kAutoClusterSize = -1;

struct Decision {
  AlgoId algo;
  ProtoId proto;
  int nChannels;        // 1..model.maxChannels (Direct: 1..model.maxDirectChannels)
  int nThreads;         // multiple of 32, 64..512 (640 for LL128)
  uint32_t chunkBytes;  // payload bytes per step per connection: a multiple of the protocol's grain
                        // (kChunkGrainBytes), at most the slot's payload, never 0
  double estimatedUs;   // the cost the choice was made on (all maxChannels, as NCCL's table)
  int clusterSize;      // thread-block clusters of this many CTAs where the GPU has them (0: none)
  bool twoShot;         // Direct/Simple AllReduce: reduce-scatter then all-gather (device/coll/direct_simple_colls.h)
  bool symmetric;       // Direct/Simple on the peers' buffers in symmetric windows (device/coll/symmetric_colls.h)
};

// Which of an operation's buffers lie in symmetric windows that every rank maps: the send buffer
// (its peers may load it) and the receive buffer (its peers may store into it). The caller looks
// them up on its own rank; every rank is expected to register alike, as NCCL asks. Nothing else
// of the call may steer the choice: ranks may differ in what they know of each other (one may run
// an AllReduce in place while another does not, as NCCL allows), and must still agree.
struct SymmetricBuffers {
  bool send = false;
  bool recv = false;
};

// Whether the symmetric kernels can run `coll` on such buffers (the peers' side of each buffer
// they touch is a window); where they can, the planner offers them beside the other candidates.
bool symmetricKernelFits(const SymmetricBuffers& sym, CollId coll);

// What one operation asks beyond its communicator's model: ncclCollConfig_t's fields as a
// nccl*Config call gives them (launch/coll_config.h reads and checks them). The defaults ask
// nothing, so decide() without them is the plain call's decision.
constexpr int kClusterOfComm = -2;  // OpConstraints::cgaClusterSize: CommModel::cgaClusterSize decides
struct OpConstraints {
  // Channels (CTAs) of the operation: at least minChannels where the chosen algorithm and protocol
  // have that many (else all they have), at most maxChannels; both >= 1.
  int minChannels = 1;
  int maxChannels = kMaxChannels;
  int cgaClusterSize = kClusterOfComm;  // 0-8, or kClusterOfComm
  // algSelection: the rows (plan/selection.h) this operation may use, on top of the filter (0: no
  // restriction). With forceSelection, a selection that leaves the operation no usable algorithm
  // and protocol on this communicator is refused; without, the operation falls back to the
  // automatic choice (an INFO line says so). selectionText is the caller's string, for messages.
  uint64_t selectionRows = 0;
  bool forceSelection = true;
  std::string selectionText;
  SymmetricBuffers symmetric;  // the symmetric kernels' candidates (Direct/Simple; no FIFO needed)
};

// bytes = the operation's nccl-tests "size": count*elemsize for AllReduce/Broadcast/Reduce,
// sendcount*elemsize*nranks for AllGather, recvcount*elemsize*nranks for ReduceScatter.
// nranks == 1: Ring/Simple on one channel, whatever the filter (a one-rank operation runs no
// algorithm; NCCL does the same), estimate 0.
// The candidates are Ring with every protocol usable on this communicator (LL needs llOk, LL128 ll128Ok),
// Direct with LL (where maxDirectChannels > 0) and Simple (where directSimpleSlotBytes > 0 too; the
// two-shot AllReduce on more than two ranks) and, for AllReduce, Tree with LL or Simple (where
// nTreeChannels > 0); the least estimated time wins. If the filter leaves
// no candidate for this collective: WARN naming NCCL_ALGO/NCCL_PROTO and the collective,
// ncclInvalidUsage. An inconsistent model (nranks < 1, maxChannels outside 1..kMaxChannels,
// maxDirectChannels outside 0..kMaxDirectChannels, bandwidth <= 0): WARN, ncclInternalError.
[[nodiscard]] ncclResult_t decide(const CommModel& model, const Filter& filter, CollId coll, size_t bytes,
                                  Decision* out);
// The same within `op`'s constraints: channels within [minChannels, maxChannels] (the model's
// channels of each algorithm capped at maxChannels before the costs are compared), op's cluster
// size, and only (algorithm, protocol) pairs its selection allows. A forced selection that leaves
// nothing: WARN naming config->algSelection and the collective, ncclInvalidUsage.
[[nodiscard]] ncclResult_t decide(const CommModel& model, const Filter& filter, const OpConstraints& op, CollId coll,
                                  size_t bytes, Decision* out);

// The model a zero-copy (registered) ring of `coll` is planned on: half the channels, carrying the
// whole bandwidth, where the zero-copy path keeps the copy path's bandwidth on them (write-direct;
// read-direct ReduceScatter on two ranks), else all of them (see plan.cc).
CommModel zeroCopyModel(const CommModel& model, CollId coll);

// Estimated time in microseconds of Ring with `proto` on `nChannels` channels (values below 1 count
// as 1), for ncclGroupSimulateEnd. 0 when nranks == 1; -1 when the model cannot estimate (nranks < 1
// or bandwidth <= 0). Nondecreasing in bytes.
double estimateUs(const CommModel& model, CollId coll, ProtoId proto, int nChannels, size_t bytes);

// The same for Direct with LL (one hop) on `nChannels` direct channels; -1 also when the
// communicator has no direct channels.
double estimateDirectUs(const CommModel& model, CollId coll, int nChannels, size_t bytes);
// The same for Direct with Simple (model.directSimpleSlotBytes > 0): one hop, or for AllReduce with
// twoShot a direct reduce-scatter then a direct all-gather. Each phase takes one Simple handshake
// (the ring's per-step floor) per slot a CTA moves to a peer, and the bytes of the rank's busiest
// port go at the Simple ring's bandwidth: a model from the Simple ring's measured figures, not yet
// fitted to the direct kernels.
double estimateDirectSimpleUs(const CommModel& model, CollId coll, int nChannels, size_t bytes, bool twoShot);

// The same for the symmetric kernels (Direct/Simple on the peers' buffers, twoShot for the two-hop
// AllReduce): two barriers of one handshake each, and the bytes this rank loads from and stores to
// its peers (Broadcast: all its root sends) at the Simple ring's bandwidth. Not yet fitted.
double estimateSymmetricUs(const CommModel& model, CollId coll, int nChannels, size_t bytes, bool twoShot);

// The same for Tree AllReduce with LL or Simple on `nChannels` tree channels: up and down the
// deepest path, the two phases one after the other; -1 when the communicator has no trees.
double estimateTreeUs(const CommModel& model, ProtoId proto, int nChannels, size_t bytes);

// Names for logs ("AllReduce", "Ring", "LL128"); "unknown" outside the enums.
const char* collName(CollId coll);
const char* algoName(AlgoId algo);
const char* protoName(ProtoId proto);

}  // namespace braid::plan
