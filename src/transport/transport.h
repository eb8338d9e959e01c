// Connections between ranks: the FIFOs of device/dev_types.h, in memory that both ends' GPUs can
// reach (ranks of one host), or in each side's host memory with the network between them (NET).
//
// P2P: GPU memory. The receiver's buffers and tail live in its GPU, the sender's head in the
// sender's GPU; each side maps the other's block. Within one process (ranks as threads) the raw
// pointer is passed and peer access enabled; across processes the block is a cuMem allocation
// exported as a POSIX file descriptor and passed over an abstract Unix datagram socket with
// SCM_RIGHTS (NCCL_CUMEM_ENABLE, default automatic), or a cudaMalloc block opened with cudaIpc.
// SHM: pinned host memory mapped into both GPUs (cudaHostAlloc within one process; a POSIX shared
// memory segment registered with cudaHostRegister across processes), the receiver's buffers and
// tail in a segment the receiver creates, the head in one the sender creates.
//
// NET: ranks on other hosts (net_connect.h): each side's FIFO in its own pinned host memory, one
// network connection per channel and direction, the slots moved by the communicator's proxy.
//
// Memory is batched: one block per (peer, direction, kind) holds the counters and buffers of every
// channel that uses that peer (layout in transport/layout.h).
//
// Out-of-band messages: bootstrap send/recv with tags from the range Context::connectTags names
// (bootstrap/tags.h: one for the collective connects, another for the point-to-point ones).
// Unix socket names (abstract namespace): "braid-uds-<commHash>-<rank>-<pid>-<n>"; shared memory
// segments: "/braid-shm-<commHash>-<rank>-<peer>-<send|recv>-<pid>-<n>", where n counts connects in the process.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/tags.h"
#include "device/dev_types.h"
#include "util/rank_place.h"

namespace braid::net {
class Network;
}
namespace braid::proxy {
class Proxy;
}

namespace braid::transport {

enum class Kind : int { kP2p = 1, kShm = 2, kNet = 3 };

// Channels one connectChannels call connects (a 64-bit mask names them in the peers' messages).
constexpr int kMaxConnectChannels = 64;

struct Context {
  int rank;
  int nranks;
  int cudaDev;
  uint64_t commHash;
  Bootstrap* bootstrap;          // tagged send/recv between ranks (tags above)
  std::vector<RankPlace> peers;  // indexed by rank
  size_t
      buffBytes[kNumProtos];  // FIFO bytes per protocol per connection (kFifoSlots[p] slots; multiple of 4096; 0: none)
  const std::atomic<int>* abortFlag;
  tags::Range connectTags = tags::kCollectiveConnect;  // or tags::kP2pConnect for point-to-point connections
  // NET channels only (null when the call has none): the communicator's network and proxy, which
  // must outlive the Connections.
  net::Network* network = nullptr;
  proxy::Proxy* proxy = nullptr;
  bool netLl = false;  // NET channels get LL buffers too (BRAID_NET_LL; see device/dev_types.h)
};

// The bootstrap tag of a connect's message sent by the `senderRole` end (0: send, 1: receive) of a
// `kind` connection: kind * 2 + role into the context's range.
static_assert(static_cast<int>(Kind::kNet) * 2 + 1 < tags::kCollectiveConnect.count &&
                  static_cast<int>(Kind::kNet) * 2 + 1 < tags::kP2pConnect.count,
              "every (kind, role) has a tag in the connect ranges");
inline int connectTag(const Context& ctx, Kind kind, int senderRole) {
  return ctx.connectTags.first + static_cast<int>(kind) * 2 + senderRole;
}

// Per channel: this rank sends to sendPeer and receives from recvPeer. Either may be kNoPeer: that
// direction of the channel is not connected (its DevSendConn / DevRecvConn stays zero), so that
// channel numbers can name edges the same way on both ends even where a rank has no such edge.
constexpr int kNoPeer = -1;
struct ChannelLinks {
  int sendPeer;
  Kind sendKind;
  int recvPeer;
  Kind recvKind;
};

class Block;

// One block a Connections holds, with what suspending it needs (transport/suspend.h): the peer it
// is shared with, how many of its first bytes must survive (own blocks: the FIFO counters), and the
// address the owner knows it by (the same on both ends, so that a remade block's file descriptor
// finds its mapping).
struct BlockRecord {
  Block* block;
  bool own;  // allocated by this rank (else mapped from the peer)
  int peer;
  size_t keepBytes;
  uint64_t ownerAddress;
};

// Owns every allocation, mapping, imported handle and registration made by connectChannels; the
// destructor frees them all (imported mappings before the handles behind them, in reverse order of
// creation) and never waits for or talks to peers. Destroy it only when no kernel uses the
// connections any more. It must outlive every kernel that uses them.
class Connections {
 public:
  virtual ~Connections() = default;
  // Its blocks of one host (P2P, SHM), own and mapped; NET connections keep host memory only.
  virtual const std::vector<BlockRecord>& blocks() const = 0;

 protected:
  Connections() = default;
};

// Collective over the ranks the channels name: each calls it at the same time with its own channel list
// (its sends match its sendPeer's receives on the same channel, with the same Kind). Fills send[c]
// and recv[c] for every channel c (step = 0), all pointers valid on ctx.cudaDev. Bounded by
// NCCL_BOOTSTRAP_TIMEOUT and the abort flag. On failure nothing is left allocated and *out is null.
// The calling thread's current device is restored before returning.
[[nodiscard]] ncclResult_t connectChannels(const Context& ctx, const std::vector<ChannelLinks>& channels,
                                           std::unique_ptr<Connections>* out, std::vector<DevSendConn>* send,
                                           std::vector<DevRecvConn>* recv);

}  // namespace braid::transport
