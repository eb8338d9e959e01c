// One ncclSend or ncclRecv as the API received it (after its checks), queued until its group
// launches. AlltoAll, Gather and Scatter arrive here as groups of them.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

namespace braid {
namespace reg {
struct Registration;
}

struct P2pTask {
  bool send;     // ncclSend (buff is read) or ncclRecv (buff is written)
  int peer;      // may be this rank: a self send needs a self receive in the same group
  char* buff;    // ncclSend's buffer is const to the API; the send side only reads it
  size_t bytes;  // count * element size; 0 only under BRAID_P2P_CHECK_COUNTS (otherwise dropped at once)
  size_t count;  // as the caller gave it, for messages
  ncclDataType_t dtype;
  cudaStream_t stream;
  // Zero-copy (registered buffers, p2p_reg.cc): a send's destination in the peer's receive buffer,
  // mapped here; a receive's own buffer, which the peer writes. Null: the copy path.
  char* direct = nullptr;
  reg::Registration* reg = nullptr;  // the registration of buff, when direct
  // A send whose buffer a receive of the same group also writes (in-place ncclAlltoAll): it is
  // copied before the launch and sent from the copy (launch/p2p_stage.cc)...
  bool staged = false;
  // ...or, with its receive (same peer, same range), moved without a copy: each channel's receive
  // waits for that channel's send to have read the range (DevP2pCta's kP2pGuarded).
  bool guarded = false;
  // launchCompletionEvent of the AlltoAll, Gather or Scatter Config call it belongs to (null: none):
  // the group's last point-to-point kernel records it as its CTAs have all begun.
  cudaEvent_t launchEvent = nullptr;
};

// Self sends matched with their self receives (send, receive), each pair one device copy; staging
// copies travel the same way (send: the source, receive: the destination).
using P2pSelfPairs = std::vector<std::pair<const P2pTask*, const P2pTask*>>;
// A group's sends and receives by (peer, send?), in the order they were queued (p2p_launch.cc).
using P2pQueues = std::map<std::pair<int, bool>, std::vector<const P2pTask*>>;

// Which operations of a launch are balanced (device/prims/p2p_balanced.h), decided alike on both
// ends of a pair from what both know: the operation's size and place in its queue, the pair's
// transport and the parameters.
struct P2pBalance {
  // Per peer: linked by P2P. Only those pairs are balanced: NET connections have no step tags, and
  // SHM pairs are far from the SM store rates that balancing evens out.
  const std::vector<char>* p2pPairs = nullptr;
  uint64_t slotBytes = 0;
  int64_t minBytes = 0;    // BRAID_P2P_BALANCE_BYTES
  int64_t chunkBytes = 0;  // BRAID_P2P_BALANCE_CHUNK

  // The chunk of `op`, the indexInQueue-th of its (peer, direction) queue, whose peer has
  // maxChannels channels; 0: op is moved in fixed parts.
  uint64_t chunk(const P2pTask& op, size_t indexInQueue, int maxChannels) const;
};

}  // namespace braid
