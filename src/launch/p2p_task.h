// One ncclSend or ncclRecv as the API received it (after its checks), queued until its group
// launches. AlltoAll, Gather and Scatter arrive here as groups of them.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

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
};

}  // namespace braid
