#include "plan/p2p_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "device/dev_types.h"

namespace braid::plan {
namespace {

// Cost model of the point-to-point kernel (see estimateP2pUs). Per channel: one Simple CTA copies
// ~21 GB/s; a pair saturates near 335 GB/s whatever the channel count (16 to 21 channels measured,
// scripts/experiments/tune-plans/2026-11-24-p2p-channels.txt), a balanced operation near 360 GB/s (350-363 from
// 256 MiB to 1 GiB, 2 H200, docs/performance-log.md, 2026-11-22); a GPU moving data to or from
// every peer at once near 290 GB/s each way (the port rate, which binds only with several peers).
// Pairs without NVLink get the PCIe / host-memory figure.
constexpr double kP2pLaunchUs = 6.0;
constexpr double kP2pChannelGBps = 21.0;
constexpr double kP2pPairNvlinkGBps = 335.0;
constexpr double kP2pPairBalancedGBps = 360.0;
constexpr double kP2pPortNvlinkGBps = 290.0;
constexpr double kP2pPairOtherGBps = 12.0;
constexpr double kSelfCopyGBps = 2000.0;  // a device copy inside one GPU (bytes read + written ~4 TB/s)

double usFor(uint64_t bytes, double gbps) { return static_cast<double>(bytes) / (1000.0 * gbps); }

}  // namespace

int p2pChannelsPerPeer(int64_t wanted, int maxChannels, int nranks, int residentCtas) {
  int64_t channels = std::min<int64_t>(std::max<int64_t>(wanted, 1), std::max(maxChannels, 1));
  if (nranks < 2) return static_cast<int>(channels);
  int64_t fit = std::max(1, residentCtas / (2 * (nranks - 1)));
  return static_cast<int>(std::min(channels, fit));
}

int p2pChannelsFor(uint64_t bytes, int channelsPerPeer) {
  uint64_t n = (bytes + kP2pBytesPerChannel - 1) / kP2pBytesPerChannel;
  uint64_t cap = static_cast<uint64_t>(std::max(channelsPerPeer, 1));
  return static_cast<int>(std::min<uint64_t>(std::max<uint64_t>(n, 1), cap));
}

P2pPart p2pPart(uint64_t bytes, int channel, int nChannels) {
  uint64_t share = (bytes + nChannels - 1) / nChannels;
  share = (share + 15) / 16 * 16;
  uint64_t begin = std::min(bytes, share * static_cast<uint64_t>(channel));
  uint64_t end = std::min(bytes, begin + share);
  return {begin, end - begin};
}

uint64_t p2pBalancedChunk(uint64_t bytes, int channels, uint64_t slotBytes, int64_t minBytes, int64_t chunkBytes) {
  if (minBytes <= 0 || bytes < static_cast<uint64_t>(minBytes) || channels < 2) return 0;
  constexpr uint64_t kPage = kP2pBalancedPage;
  uint64_t chunk = std::min<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(chunkBytes, 0)), slotBytes);
  chunk = std::min<uint64_t>(chunk, UINT16_MAX * kPage) / kPage * kPage;
  return chunk;
}

double estimateP2pUs(const std::vector<P2pOpModel>& ops, int channelsPerPeer) {
  if (ops.empty()) return 0.0;
  std::map<std::pair<int, bool>, double> queueUs;  // (peer, send) -> its operations one after another
  std::map<std::pair<int, bool>, int> queueOps;
  int segments = 0;  // of the kernel's work list, as the launch counts them
  double sendUs = 0.0;
  double recvUs = 0.0;
  double selfUs = 0.0;
  for (const P2pOpModel& op : ops) {
    if (op.self) {
      if (op.send) selfUs += usFor(op.bytes, kSelfCopyGBps);
      if (op.send) segments += p2pChannelsFor(op.bytes, kP2pSelfCopyCtas);
      continue;
    }
    if (op.bytes > 0) {
      queueOps[{op.peer, op.send}]++;
      segments += p2pChannelsFor(op.bytes, channelsPerPeer);
    }
    if (op.nvlink) {
      double channelRate = kP2pChannelGBps * p2pChannelsFor(op.bytes, channelsPerPeer);
      double pairRate = op.balanced ? kP2pPairBalancedGBps : kP2pPairNvlinkGBps;
      queueUs[{op.peer, op.send}] += usFor(op.bytes, std::min(channelRate, pairRate));
      (op.send ? sendUs : recvUs) += usFor(op.bytes, kP2pPortNvlinkGBps);
    } else {
      queueUs[{op.peer, op.send}] += usFor(op.bytes, kP2pPairOtherGBps);
    }
  }
  // The port rate was measured with every peer at once; one peer is bound by its pair's rate only.
  int sendPeers = 0;
  int recvPeers = 0;
  for (const auto& [key, us] : queueUs) (key.second ? sendPeers : recvPeers)++;
  double busiest = std::max(sendPeers > 1 ? sendUs : 0.0, recvPeers > 1 ? recvUs : 0.0);
  for (const auto& [key, us] : queueUs) busiest = std::max(busiest, us);
  // A group over one kernel's work list runs in rounds (kP2pOpsPerRound), a launch each.
  int launches = 1;
  if (segments > DevP2pArgsLarge::kMaxSegs) {
    for (const auto& [key, n] : queueOps) launches = std::max(launches, (n + kP2pOpsPerRound - 1) / kP2pOpsPerRound);
  }
  // Self copies run beside the transfers to peers (on their own CTAs of the same kernel).
  return kP2pLaunchUs * launches + std::max(busiest, selfUs);
}

int p2pPortPeers(int channelsPerPeer) {
  const double channelsRate = kP2pChannelGBps * std::max(channelsPerPeer, 1);
  return std::max(1, static_cast<int>(std::ceil(kP2pPortNvlinkGBps / channelsRate)));
}

double estimateStageCopyUs(uint64_t bytes) { return bytes == 0 ? 0.0 : usFor(bytes, kSelfCopyGBps); }

}  // namespace braid::plan
