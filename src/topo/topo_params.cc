// The topology's knobs from the environment (NCCL_P2P_*, NCCL_SHM_DISABLE, channel bounds) and
// the names of path types and transports.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdlib>
#include <string>

#include "topo/topo.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::topo {
namespace {

struct PathName {
  const char* name;
  PathType path;
};

// NCCL's names in NCCL's order. C2C (chip-to-chip, between NVB and PIX) allows what NVB allows here;
// P2C and PXN (between PXB and PHB) allow what PXB allows: no path this enum produces lies between.
constexpr PathName kPathNames[] = {
    {"LOC", PathType::kLoc}, {"NVL", PathType::kNvl}, {"NVB", PathType::kNvb}, {"C2C", PathType::kNvb},
    {"PIX", PathType::kPix}, {"PXB", PathType::kPxb}, {"P2C", PathType::kPxb}, {"PXN", PathType::kPxb},
    {"PHB", PathType::kPhb}, {"SYS", PathType::kSys},
};

// NCCL's legacy integer levels: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS.
constexpr PathType kLegacyLevels[] = {PathType::kLoc, PathType::kPix, PathType::kPxb,
                                      PathType::kPhb, PathType::kSys, PathType::kSys};

// The channel bound from the config (values < 1 are "not given", giving `fallback`), overridden by
// the NCCL_*_NCHANNELS variable when that is >= 1; clamped to [1, kMaxChannels].
int channelBound(ParamId id, int configValue, int fallback) {
  int value = configValue >= 1 ? configValue : fallback;
  int64_t env = paramInt(id);
  if (env >= 1) {
    value = static_cast<int>(std::min<int64_t>(env, kMaxChannels));
  } else if (env != -1) {
    WARN("%s=%" PRId64 " is not a channel count (>= 1, or -1 for automatic); ignored", paramInfo(id).name, env);
  }
  return std::clamp(value, 1, kMaxChannels);
}

}  // namespace

bool parsePathType(const std::string& text, PathType* out) {
  std::string upper = text;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const PathName& entry : kPathNames) {
    if (upper == entry.name) {
      *out = entry.path;
      return true;
    }
  }
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '5') {
    *out = kLegacyLevels[text[0] - '0'];
    return true;
  }
  return false;
}

const char* pathTypeName(PathType path) {
  switch (path) {
    case PathType::kLoc:
      return "LOC";
    case PathType::kNvl:
      return "NVL";
    case PathType::kNvb:
      return "NVB";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kSys:
      return "SYS";
    case PathType::kNet:
      return "NET";
  }
  return "?";
}

const char* transportName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kP2p:
      return "P2P";
    case TransportKind::kShm:
      return "SHM";
    case TransportKind::kNet:
      return "NET";
    case TransportKind::kNone:
      break;
  }
  return "none";
}

TopoParams topoParamsFromEnv(int configMinCtas, int configMaxCtas) {
  TopoParams params{};
  params.p2pDisable = paramInt(ParamId::kP2pDisable) != 0;
  params.shmDisable = paramInt(ParamId::kShmDisable) != 0;
  params.p2pLevel = PathType::kPxb;  // NCCL's default: P2P up to PCIe switches, not through the CPU
  const std::string& level = paramString(ParamId::kP2pLevel);
  if (!level.empty() && !parsePathType(level, &params.p2pLevel)) {
    WARN("NCCL_P2P_LEVEL=%s is not a path type (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS or 0-5); using PXB",
         level.c_str());
    params.p2pLevel = PathType::kPxb;
  }
  params.netLl = paramInt(ParamId::kNetLl) != 0;
  params.maxChannels = channelBound(ParamId::kMaxNchannels, configMaxCtas, kMaxChannels);
  params.minChannels = channelBound(ParamId::kMinNchannels, configMinCtas, 1);
  if (params.minChannels > params.maxChannels) {
    INFO(kLogInit | kLogEnv, "channel bounds: minimum %d above maximum %d; using %d", params.minChannels,
         params.maxChannels, params.maxChannels);
    params.minChannels = params.maxChannels;
  }
  return params;
}

}  // namespace braid::topo
