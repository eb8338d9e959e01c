// Where a rank runs, from what the ranks told each other at init (core/peer_info.h's PeerInfo):
// what the topology, the transports and the windows need to know of every rank.
#pragma once

#include <cstdint>

namespace braid {

struct RankPlace {
  int rank = -1;
  int cudaDev = -1;       // its device ordinal in its own process
  int64_t busId = 0;      // PCI domain:bus:device.function packed (core/peer_info.h busIdToInt)
  uint64_t hostHash = 0;  // same value on ranks of one host (NCCL_HOSTID overrides)
  uint64_t pidHash = 0;   // same value on ranks of one process
  // Its process as it named itself: only the processes of the ranks on this host may send
  // descriptors to this rank's Unix sockets (transport/uds.h).
  int32_t pid = 0;
  uint64_t pidSpace = 0;  // same value where pids mean the same process: one kernel boot, one pid namespace
};

}  // namespace braid
