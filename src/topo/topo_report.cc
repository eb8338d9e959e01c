// Reporting the topology: the NCCL_TOPO_DUMP_FILE text file and the per-connection INFO lines.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "topo/nvml_api.h"
#include "topo/topo.h"
#include "util/log.h"
#include "util/text.h"

namespace braid::topo {
namespace {

struct FileCloser {
  void operator()(FILE* file) const { std::fclose(file); }
};

// "P2P/NVLink(18)", "P2P/PCIe(PXB)", "SHM(PHB)".
std::string hopText(const Topology& topo, int from, int to) {
  const Link& link = topo.links[from * topo.nranks + to];
  TransportKind kind = topo.transport[from * topo.nranks + to];
  char text[48];
  if (kind == TransportKind::kP2p && link.path == PathType::kNvl) {
    std::snprintf(text, sizeof(text), "P2P/NVLink(%d)", link.nvlinks);
  } else if (kind == TransportKind::kP2p) {
    std::snprintf(text, sizeof(text), "P2P/PCIe(%s)", pathTypeName(link.path));
  } else {
    std::snprintf(text, sizeof(text), "%s(%s)", transportName(kind), pathTypeName(link.path));
  }
  return text;
}

std::string rankLabel(const std::vector<RankPlace>& ranks, int r) {
  char text[32];
  std::snprintf(text, sizeof(text), "%d[%d]", r, r < static_cast<int>(ranks.size()) ? ranks[r].cudaDev : -1);
  return text;
}

bool writeDump(FILE* file, const std::vector<RankPlace>& ranks, const Topology& topo) {
  int n = topo.nranks;
  bool ok = std::fprintf(file, "# braid topology v1\nnranks %d\n", n) > 0;
  for (const RankPlace& r : ranks) {
    ok = ok && std::fprintf(file, "rank %d dev %d busid %s host %016" PRIx64 " pid %016" PRIx64 "\n", r.rank, r.cudaDev,
                            busIdText(r.busId).c_str(), r.hostHash, r.pidHash) > 0;
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const Link& link = topo.links[i * n + j];
      ok = ok && std::fprintf(file, "link %d %d path %s nvlinks %d switched %d p2p %d transport %s\n", i, j,
                              pathTypeName(link.path), link.nvlinks, link.switched ? 1 : 0, link.p2pOk ? 1 : 0,
                              transportName(topo.transport[i * n + j])) > 0;
    }
  }
  const auto& lat = topo.hopLatencyUs;
  ok = ok && std::fprintf(file, "channels %d ll128 %d bw_per_channel_gbps %.3f hop_latency_us %.2f %.2f %.2f\n",
                          topo.nChannels, topo.ll128Ok ? 1 : 0, topo.bwPerChannelGBps, lat[kProtoLL], lat[kProtoLL128],
                          lat[kProtoSimple]) > 0;
  ok = ok && std::fprintf(file, "direct_channels %d\n", topo.nDirectChannels) > 0;
  for (size_t c = 0; c < topo.rings.size(); ++c) {
    std::string line = "ring " + std::to_string(c);
    for (int r : topo.rings[c]) line += " " + std::to_string(r);
    ok = ok && std::fprintf(file, "%s\n", line.c_str()) > 0;
  }
  for (size_t c = 0; c < topo.trees.size(); ++c) {
    std::string line = "tree " + std::to_string(c);
    for (const TreeLinks& t : topo.trees[c]) line += " " + std::to_string(t.parent);
    ok = ok && std::fprintf(file, "%s\n", line.c_str()) > 0;
  }
  return ok;
}

}  // namespace

ncclResult_t dumpTopology(const std::string& path, const std::vector<RankPlace>& ranks, const Topology& topo) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "w"));
  if (!file) {
    int err = errno;
    WARN("NCCL_TOPO_DUMP_FILE: cannot open %s for writing: %s (errno %d)", path.c_str(), std::strerror(err), err);
    return ncclSystemError;
  }
  bool ok = writeDump(file.get(), ranks, topo);
  FILE* raw = file.release();
  int closed = std::fclose(raw);
  if (!ok || closed != 0) {
    int err = errno;
    WARN("NCCL_TOPO_DUMP_FILE: writing %s failed: %s (errno %d)", path.c_str(), std::strerror(err), err);
    return ncclSystemError;
  }
  INFO(kLogInit | kLogGraph, "Topology of %d ranks written to %s", topo.nranks, path.c_str());
  return ncclSuccess;
}

void logConnections(int rank, const std::vector<RankPlace>& ranks, const Topology& topo) {
  int n = topo.nranks;
  if (rank < 0 || rank >= n || !logEnabled(LogLevel::kInfo, kLogInit | kLogP2p | kLogShm)) return;
  for (int c = 0; c < topo.nChannels && c < static_cast<int>(topo.rings.size()); ++c) {
    const std::vector<int>& ring = topo.rings[c];
    int pos = 0;
    while (pos < n && ring[pos] != rank) pos++;
    if (pos == n || n == 1) continue;
    int next = ring[(pos + 1) % n];
    uint64_t subsys = kLogInit | (topo.transport[rank * n + next] == TransportKind::kP2p ? kLogP2p : kLogShm);
    INFO(subsys, "Channel %02d/%02d : %s -> %s via %s", c, topo.nChannels, rankLabel(ranks, rank).c_str(),
         rankLabel(ranks, next).c_str(), hopText(topo, rank, next).c_str());
  }
  for (size_t c = 0; c < topo.trees.size(); ++c) {
    const TreeLinks& t = topo.trees[c][rank];
    const std::string children = rankList(std::vector<int>(t.children.begin(), t.children.begin() + t.nChildren));
    INFO(kLogInit, "Tree %02zu : rank %d up %d down %s", c, rank, t.parent, children.empty() ? "-" : children.c_str());
  }
  std::string ring0;
  for (int r : topo.rings.empty() ? std::vector<int>{} : topo.rings[0]) ring0 += " " + std::to_string(r);
  INFO(kLogInit,
       "rank %d: %d coll channels, %d direct channels, LL128 %s, %.1f GB/s per channel, hop %.1f us (Simple); ring "
       "0:%s",
       rank, topo.nChannels, topo.nDirectChannels, topo.ll128Ok ? "on" : "off", topo.bwPerChannelGBps,
       topo.hopLatencyUs[kProtoSimple], ring0.c_str());
}

}  // namespace braid::topo
