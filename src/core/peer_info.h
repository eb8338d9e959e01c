// What every rank tells every other rank at init: who it is, which GPU it drives, where.
// Gathered with one bootstrap allGather; the topology layer builds on it later.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/pid_space.h"  // hashBytes, localPidSpace
#include "util/rank_place.h"
#include "util/socket.h"
#include "watch/board_server.h"
#include "watch/peer_process.h"

namespace braid {

// The layout of PeerInfo: every rank of a job must send the same (one Braid build). Bumped at each
// change, so that a rank of another build is refused by name rather than misread.
constexpr int32_t kPeerInfoVersion = 2;

struct PeerInfo {
  int rank;
  int cudaDev;        // device ordinal in that process
  int computeCap;     // major * 10 + minor
  int smCount;        // multiprocessors: bounds the CTAs that kernels waiting on each other may need at once
  int64_t busId;      // PCI domain:bus:device.function packed as an integer
  uint64_t hostHash;  // same value on ranks of one host (NCCL_HOSTID overrides)
  uint64_t pidHash;   // same value on ranks of one process
  uint64_t pidSpace;  // same value where pids mean the same process: one kernel boot, one pid namespace
  int32_t pid;        // the process, in pidSpace (dead-peer detection, watch/peer_watch.h; transport/uds.h)
  // Where its process serves its progress boards and the secret that opens them (watch/board_server.h); an
  // address of family AF_UNSPEC: nowhere.
  watch::BoardServerContact boardServer;
  int32_t sharesConnections;  // 1: it joins its parent's share group (core/share_group.h); all ranks must
  int32_t version;            // kPeerInfoVersion
};
static_assert(sizeof(PeerInfo) == 120, "PeerInfo crosses process boundaries: keep it packed and fixed");
static_assert(offsetof(PeerInfo, version) == 116, "PeerInfo crosses process boundaries: keep it packed and fixed");

// Where the rank runs, as the topology, the transports and the windows see it.
inline RankPlace placeOf(const PeerInfo& p) {
  return RankPlace{p.rank, p.cudaDev, p.busId, p.hostHash, p.pidHash, p.pid, p.pidSpace};
}
std::vector<RankPlace> placesOf(const std::vector<PeerInfo>& peers);

// Checks what the rank in slot `slot` of the all-gather sent at init before anything uses it: its
// layout version (another value: another Braid build, ncclInvalidUsage), the rank it claims, and
// its board server's address family (IPv4, IPv6 or none; ncclRemoteError otherwise). One WARN
// names the rank and the field.
[[nodiscard]] ncclResult_t checkPeerInfo(const PeerInfo& peer, int slot, int nranks);

// What the communicator's watch needs of a peer (watch/comm_watch.h).
watch::PeerProcess peerProcessOf(const PeerInfo& peer);

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
