// Suspending the device memory of a communicator's connections (ncclCommSuspend / ncclCommResume).
// Every P2P block made through cuMem lets its device memory go and keeps its address range: our own
// blocks (their FIFO counters copied to host memory meanwhile) and the peers' blocks mapped here.
// On resume each rank remakes its own blocks at the same addresses, zeroed, with their counters
// back, then tells every peer it shares blocks with; a peer maps them again once told (across
// processes from a new file descriptor sent to a Unix socket that its message names; within the
// process by giving its device access again). So the DevComm, the step counters and the kernels
// that CUDA graphs captured find every buffer where it was, in the state they left it.
//
// Host memory (SHM, NET) stays as it is: suspension is for GPU memory. cudaMalloc and cudaIpc
// blocks (NCCL_CUMEM_ENABLE=0, or a GPU without virtual memory management) cannot keep their
// addresses without their memory, so a communicator that has them cannot be suspended.
//
// Messages on resume: one bootstrap message each way per peer with shared blocks (tag tags::kResume),
// then one datagram per block a peer process maps.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/tags.h"
#include "transport/transport.h"

namespace braid::transport {

struct SuspendContext {
  int rank;
  int cudaDev;
  uint64_t commHash;
  Bootstrap* bootstrap;
  const std::atomic<int>* abortFlag;
  std::vector<RankPlace> peers;  // indexed by rank: whose processes may send descriptors (uds.h)
};

// Bytes of this rank's own device memory in the blocks of `all`: what suspension frees, and what it
// cannot (cudaMalloc blocks).
struct BlockBytes {
  uint64_t suspendable = 0;
  uint64_t persistent = 0;
};
BlockBytes ownDeviceBytes(const std::vector<const Connections*>& all);

// Whether every block of `all` can be suspended; if not, *why says which cannot and why.
bool connectionsSuspendable(const std::vector<const Connections*>& all, std::string* why);

// Lets the device memory go: the mapped peers' blocks first, then our own. Local: every rank that
// shares the blocks must have finished using them (the caller's barrier comes first).
[[nodiscard]] ncclResult_t suspendConnections(const std::vector<const Connections*>& all);

// Remakes and maps again what suspendConnections let go. Collective with every peer the blocks
// name; the current device must be ctx.cudaDev.
[[nodiscard]] ncclResult_t resumeConnections(const SuspendContext& ctx, const std::vector<const Connections*>& all);

}  // namespace braid::transport
