// What every rank tells every other rank at init: who it is, which GPU it drives, where.
// Gathered with one bootstrap allGather; the topology layer builds on it later.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <vector>

#include "util/pid_space.h"  // hashBytes, localPidSpace
#include "util/socket.h"

namespace braid {

struct PeerInfo {
  int rank;
  int cudaDev;                // device ordinal in that process
  int computeCap;             // major * 10 + minor
  int smCount;                // multiprocessors: bounds the CTAs that kernels waiting on each other may need at once
  int64_t busId;              // PCI domain:bus:device.function packed as an integer
  uint64_t hostHash;          // same value on ranks of one host (NCCL_HOSTID overrides)
  uint64_t pidHash;           // same value on ranks of one process
  uint64_t pidSpace;          // same value where pids mean the same process: one kernel boot, one pid namespace
  int32_t pid;                // the process, in pidSpace (dead-peer detection, peer_watch.h; transport/uds.h)
  SocketAddress boardServer;  // where its process serves its progress boards (board_server.h); AF_UNSPEC: nowhere
  int32_t sharesConnections;  // 1: it joins its parent's share group (core/share_group.h); all ranks must
  int32_t reserved;
};
static_assert(sizeof(PeerInfo) == 88, "PeerInfo crosses process boundaries: keep it packed and fixed");

// Identity of this host: hostname and boot id, or NCCL_HOSTID when set.
uint64_t localHostHash();
// Identity of this process: pid and pid namespace.
uint64_t localPidHash();

// Converts "0000:1b:00.0" to an integer (and back, for messages).
int64_t busIdToInt(const char* busId);
void busIdToString(int64_t busId, char* out, size_t outSize);

// Rejects two ranks on one GPU of one host, with a WARN naming both ranks and the GPU.
[[nodiscard]] ncclResult_t checkDistinctGpus(const std::vector<PeerInfo>& peers);

}  // namespace braid
