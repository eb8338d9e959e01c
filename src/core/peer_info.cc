#include "core/peer_info.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "util/log.h"
#include "util/params.h"

namespace braid {
namespace {

uint64_t hashString(const std::string& s) { return hashBytes(s.data(), s.size()); }

std::string firstLineOf(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string pidNamespace() {
  char ns[256] = {};
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
  if (n < 0) ns[0] = '\0';
  return ns;
}

}  // namespace

watch::PeerProcess peerProcessOf(const PeerInfo& peer) {
  watch::PeerProcess p;
  p.pid = peer.pid;
  p.cudaDev = peer.cudaDev;
  p.hostHash = peer.hostHash;
  p.pidSpace = peer.pidSpace;
  p.boardServer = peer.boardServer;
  return p;
}

uint64_t localHostHash() {
  const std::string& override = paramString(ParamId::kHostId);
  if (!override.empty()) return hashString(override);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  // The boot id separates containers that share a host name but not a machine.
  return hashString(std::string(host) + firstLineOf("/proc/sys/kernel/random/boot_id"));
}

uint64_t localPidHash() { return hashString(std::to_string(getpid()) + pidNamespace()); }

int64_t busIdToInt(const char* busId) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(busId, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return -1;
  return (static_cast<int64_t>(domain) << 20) | (bus << 12) | (device << 4) | function;
}

void busIdToString(int64_t id, char* out, size_t outSize) {
  std::snprintf(out, outSize, "%04" PRIx64 ":%02" PRIx64 ":%02" PRIx64 ".%" PRIx64, id >> 20, (id >> 12) & 0xff,
                (id >> 4) & 0xff, id & 0xf);
}

std::vector<RankPlace> placesOf(const std::vector<PeerInfo>& peers) {
  std::vector<RankPlace> places;
  places.reserve(peers.size());
  for (const PeerInfo& p : peers) places.push_back(placeOf(p));
  return places;
}

ncclResult_t checkPeerInfo(const PeerInfo& peer, int slot, int nranks) {
  if (peer.version != kPeerInfoVersion) {
    WARN(
        "rank %d of %d sent peer information of layout %d, this rank's is %d: every rank of a job must run the "
        "same Braid build",
        slot, nranks, peer.version, kPeerInfoVersion);
    return ncclInvalidUsage;
  }
  if (peer.rank != slot) {
    WARN("rank %d of %d sent peer information that says it is rank %d", slot, nranks, peer.rank);
    return ncclRemoteError;
  }
  const int family = peer.boardServer.address.sa.sa_family;
  if (family != AF_UNSPEC && !socketAddressIsValid(peer.boardServer.address)) {
    WARN("rank %d of %d sent a board server address of unknown family %d", slot, nranks, family);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

ncclResult_t checkDistinctGpus(const std::vector<PeerInfo>& peers) {
  for (size_t a = 0; a < peers.size(); a++) {
    for (size_t b = a + 1; b < peers.size(); b++) {
      if (peers[a].hostHash == peers[b].hostHash && peers[a].busId == peers[b].busId) {
        char bus[32];
        busIdToString(peers[a].busId, bus, sizeof(bus));
        WARN(
            "ranks %d and %d both use the GPU with bus id %s (device %d of rank %d, device %d of rank %d); each "
            "rank of a communicator needs its own GPU",
            peers[a].rank, peers[b].rank, bus, peers[a].cudaDev, peers[a].rank, peers[b].cudaDev, peers[b].rank);
        return ncclInvalidUsage;
      }
    }
  }
  return ncclSuccess;
}

}  // namespace braid
