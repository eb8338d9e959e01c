// Local link detection through NVML: NVLink lanes (direct and through NVSwitch), NVML's P2P verdict
// and the PCIe distance of every same-host pair, from this rank's GPU.
#include <dlfcn.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "topo/nvml_api.h"
#include "util/log.h"

namespace braid::topo {
namespace {

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* slot, bool required, const char* soname) {
  void* fn = dlsym(lib, name);
  *slot = reinterpret_cast<Fn>(fn);
  if (fn == nullptr && required) {
    INFO(kLogInit | kLogGraph, "NVML: %s has no symbol %s; topology detection falls back to SHM", soname, name);
    return false;
  }
  return true;
}

const char* nvmlErrorText(const NvmlApi& api, NvmlReturn res) {
  const char* text = api.errorString != nullptr ? api.errorString(res) : nullptr;
  return text != nullptr ? text : "unknown NVML error";
}

// What one GPU's active NVLinks lead to: other GPUs (by packed bus id) and NVSwitch ports.
struct NvlinkEnds {
  std::map<int64_t, int> gpuLinks;
  int switchLinks = 0;
};

// Without nvmlDeviceGetNvLinkRemoteDeviceType, a link's far end is taken to be a switch when its bus
// id is not a GPU NVML knows (an NVSwitch is not an NVML device).
bool busIdIsSwitch(const NvmlApi& api, const NvmlPciInfo& pci) {
  NvmlDevice other = nullptr;
  return api.deviceByBusId(pci.busId, &other) != kNvmlSuccess;
}

NvlinkEnds countNvlinks(const NvmlApi& api, NvmlDevice dev) {
  NvlinkEnds ends;
  for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
    int active = 0;
    // Links past the GPU's own count answer NOT_SUPPORTED / INVALID_ARGUMENT: they are not there.
    if (api.nvlinkState(dev, link, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) continue;
    int type = -1;
    bool typeKnown = api.nvlinkRemoteType != nullptr && api.nvlinkRemoteType(dev, link, &type) == kNvmlSuccess;
    if (typeKnown && type == kNvmlNvlinkDeviceSwitch) {
      ends.switchLinks++;  // a switch port's PCI info is not always available: do not ask for it
      continue;
    }
    NvmlPciInfo pci{};
    if (api.nvlinkRemotePci(dev, link, &pci) != kNvmlSuccess) continue;
    if (!typeKnown && busIdIsSwitch(api, pci)) {
      ends.switchLinks++;
    } else if (!typeKnown || type == kNvmlNvlinkDeviceGpu) {
      int64_t remote = busIdParse(pci.busId);
      if (remote >= 0) ends.gpuLinks[remote]++;
    }
  }
  return ends;
}

PathType pathFromAncestor(int level) {
  switch (level) {
    case kNvmlTopologyInternal:  // two GPUs on one board, behind the board's own switch
    case kNvmlTopologySingle:
      return PathType::kPix;
    case kNvmlTopologyMultiple:
      return PathType::kPxb;
    case kNvmlTopologyHostBridge:
    case kNvmlTopologyNode:
      return PathType::kPhb;
    default:
      return PathType::kSys;
  }
}

void logCpuAffinity(const NvmlApi& api, NvmlDevice dev, const RankPlace& me) {
  if (api.cpuAffinity == nullptr || !logEnabled(LogLevel::kInfo, kLogGraph)) return;
  constexpr unsigned kWords = 16;  // 1024 CPUs
  unsigned long set[kWords] = {};
  if (api.cpuAffinity(dev, kWords, set) != kNvmlSuccess) return;
  std::string mask;
  for (int w = kWords - 1; w >= 0; --w) {
    if (mask.empty() && set[w] == 0 && w > 0) continue;
    char word[24];
    std::snprintf(word, sizeof(word), mask.empty() ? "%lx" : "%016lx", set[w]);
    mask += word;
  }
  INFO(kLogGraph, "Topo: rank %d GPU %s CPU affinity mask 0x%s", me.rank, busIdText(me.busId).c_str(), mask.c_str());
}

// Fills the links to every same-host peer of `self` through NVML. Returns false (after one INFO
// line) when NVML cannot describe this rank's own GPU; pairs NVML cannot find keep the fallback.
bool detectWithNvml(const NvmlApi& api, const std::vector<RankPlace>& ranks, int self, std::vector<Link>* row) {
  const RankPlace& me = ranks[self];
  NvmlDevice selfDev = nullptr;
  NvmlReturn res = api.deviceByBusId(busIdText(me.busId).c_str(), &selfDev);
  if (res != kNvmlSuccess) {
    INFO(kLogInit | kLogGraph, "NVML has no GPU with bus id %s (rank %d): %s; P2P off, pairs use SHM",
         busIdText(me.busId).c_str(), me.rank, nvmlErrorText(api, res));
    return false;
  }
  logCpuAffinity(api, selfDev, me);
  NvlinkEnds mine = countNvlinks(api, selfDev);
  for (size_t j = 0; j < ranks.size(); ++j) {
    if (static_cast<int>(j) == self || ranks[j].hostHash != me.hostHash) continue;
    NvmlDevice peerDev = nullptr;
    res = api.deviceByBusId(busIdText(ranks[j].busId).c_str(), &peerDev);
    if (res != kNvmlSuccess) {
      INFO(kLogInit | kLogGraph, "NVML has no GPU with bus id %s (rank %d, peer of rank %d): %s; that pair uses SHM",
           busIdText(ranks[j].busId).c_str(), ranks[j].rank, me.rank, nvmlErrorText(api, res));
      continue;
    }
    Link link{PathType::kSys, 0, false};
    auto direct = mine.gpuLinks.find(ranks[j].busId);
    if (direct != mine.gpuLinks.end()) link.nvlinks += direct->second;
    if (mine.switchLinks > 0) {
      // Every GPU on the NVSwitch fabric reaches every other one; the pair's lanes are bounded by the
      // side with fewer switch ports.
      link.nvlinks += std::min(mine.switchLinks, countNvlinks(api, peerDev).switchLinks);
      link.switched = true;
    }
    int readStatus = -1;
    int writeStatus = -1;
    link.p2pOk = api.p2pStatus(selfDev, peerDev, kNvmlP2pCapsRead, &readStatus) == kNvmlSuccess &&
                 api.p2pStatus(selfDev, peerDev, kNvmlP2pCapsWrite, &writeStatus) == kNvmlSuccess &&
                 readStatus == kNvmlP2pStatusOk && writeStatus == kNvmlP2pStatusOk;
    if (link.nvlinks > 0) {
      link.path = PathType::kNvl;
    } else {
      int level = -1;
      res = api.commonAncestor(selfDev, peerDev, &level);
      link.path = res == kNvmlSuccess ? pathFromAncestor(level) : PathType::kSys;
    }
    (*row)[j] = link;
    INFO(kLogGraph, "Topo: rank %d (%s) -> rank %d (%s): %s nvlinks %d p2p %s", me.rank, busIdText(me.busId).c_str(),
         ranks[j].rank, busIdText(ranks[j].busId).c_str(), pathTypeName(link.path), link.nvlinks,
         link.p2pOk ? "ok" : "no");
  }
  return true;
}

}  // namespace

std::string busIdText(int64_t busId) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04" PRIx64 ":%02" PRIx64 ":%02" PRIx64 ".%" PRIx64, busId >> 20,
                (busId >> 12) & 0xff, (busId >> 4) & 0xff, busId & 0xf);
  return text;
}

int64_t busIdParse(const char* text) {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  if (text == nullptr || std::sscanf(text, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return -1;
  return (static_cast<int64_t>(domain) << 20) | (static_cast<int64_t>(bus & 0xff) << 12) |
         (static_cast<int64_t>(device & 0xff) << 4) | (function & 0xf);
}

bool nvmlLoad(const char* soname, NvmlApi* api) {
  *api = NvmlApi{};
  // Kept open for the life of the process: the table points into it.
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    INFO(kLogInit | kLogGraph, "NVML: cannot load %s (%s); topology detection falls back to SHM", soname,
         err != nullptr ? err : "unknown error");
    return false;
  }
  bool ok = resolve(lib, "nvmlInit_v2", &api->init, true, soname) &&
            resolve(lib, "nvmlErrorString", &api->errorString, true, soname) &&
            resolve(lib, "nvmlDeviceGetHandleByPciBusId_v2", &api->deviceByBusId, true, soname) &&
            resolve(lib, "nvmlDeviceGetNvLinkState", &api->nvlinkState, true, soname) &&
            resolve(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->nvlinkRemotePci, true, soname) &&
            resolve(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &api->nvlinkRemoteType, false, soname) &&
            resolve(lib, "nvmlDeviceGetP2PStatus", &api->p2pStatus, true, soname) &&
            resolve(lib, "nvmlDeviceGetTopologyCommonAncestor", &api->commonAncestor, true, soname) &&
            resolve(lib, "nvmlDeviceGetCpuAffinity", &api->cpuAffinity, false, soname) &&
            resolve(lib, "nvmlDeviceGetIndex", &api->deviceIndex, false, soname);
  if (!ok) return false;
  NvmlReturn res = api->init();
  if (res != kNvmlSuccess) {
    INFO(kLogInit | kLogGraph, "NVML: nvmlInit_v2 failed: %s; topology detection falls back to SHM",
         nvmlErrorText(*api, res));
    return false;
  }
  return true;
}

const NvmlApi* nvmlApi() {
  static std::once_flag once;
  static NvmlApi api;
  static bool loaded = false;
  std::call_once(once, [] { loaded = nvmlLoad("libnvidia-ml.so.1", &api); });
  return loaded ? &api : nullptr;
}

int nvmlIndexOfBusId(int64_t busId) {
  const NvmlApi* api = nvmlApi();
  if (api == nullptr || api->deviceIndex == nullptr || busId < 0) return -1;
  NvmlDevice device = nullptr;
  unsigned index = 0;
  if (api->deviceByBusId(busIdText(busId).c_str(), &device) != kNvmlSuccess) return -1;
  if (api->deviceIndex(device, &index) != kNvmlSuccess) return -1;
  return static_cast<int>(index);
}

ncclResult_t detectLinksWith(const NvmlApi* api, const std::vector<RankPlace>& ranks, int self,
                             std::vector<Link>* row) {
  if (row == nullptr || self < 0 || self >= static_cast<int>(ranks.size())) {
    WARN("detectLinks: rank index %d out of range for %zu ranks (or no output row)", self, ranks.size());
    return ncclInvalidArgument;
  }
  const RankPlace& me = ranks[self];
  row->assign(ranks.size(), Link{PathType::kPhb, 0, false});
  int sameHostPeers = 0;
  for (size_t j = 0; j < ranks.size(); ++j) {
    if (static_cast<int>(j) == self) {
      (*row)[j] = Link{PathType::kLoc, 0, true};
    } else if (ranks[j].hostHash != me.hostHash) {
      (*row)[j] = Link{PathType::kNet, 0, false};
    } else {
      sameHostPeers++;
    }
  }
  if (sameHostPeers == 0) return ncclSuccess;
  if (api == nullptr || !detectWithNvml(*api, ranks, self, row)) {
    if (api == nullptr) {
      INFO(kLogInit | kLogGraph, "NVML unavailable: rank %d assumes PHB without P2P to its %d same-host peers (SHM)",
           me.rank, sameHostPeers);
    }
    for (size_t j = 0; j < ranks.size(); ++j) {
      if (static_cast<int>(j) != self && ranks[j].hostHash == me.hostHash) (*row)[j] = Link{PathType::kPhb, 0, false};
    }
  }
  return ncclSuccess;
}

// One detection at a time per process: the communicators of one process connect concurrently (one
// thread each), and a peer's lookup was seen to fail under that concurrency on 2 H200 driven from
// one thread (the pair then fell back to SHM); the detection runs once per communicator, so
// serializing it costs nothing.
ncclResult_t detectLinks(const std::vector<RankPlace>& ranks, int self, std::vector<Link>* row) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  return detectLinksWith(nvmlApi(), ranks, self, row);
}

}  // namespace braid::topo
