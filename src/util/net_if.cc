// Interface selection (see net_if.h for the rules).
#include "util/net_if.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/text.h"

namespace braid {

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool isLinkLocal6(const SocketAddress& addr) {
  return addr.sa.sa_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&addr.sin6.sin6_addr);
}

bool isLoopback(const NetIf& netIf) { return (netIf.flags & IFF_LOOPBACK) != 0 || netIf.name == "lo"; }

// Bytes of the address proper (no port), for subnet comparisons.
const unsigned char* addressBytes(const SocketAddress& addr, size_t* size) {
  if (addr.sa.sa_family == AF_INET6) {
    *size = sizeof(addr.sin6.sin6_addr);
    return reinterpret_cast<const unsigned char*>(&addr.sin6.sin6_addr);
  }
  *size = sizeof(addr.sin.sin_addr);
  return reinterpret_cast<const unsigned char*>(&addr.sin.sin_addr);
}

bool sameSubnet(const NetIf& netIf, const SocketAddress& other) {
  if (netIf.addr.sa.sa_family != other.sa.sa_family || netIf.mask.sa.sa_family != other.sa.sa_family) return false;
  size_t n = 0, m = 0, o = 0;
  const unsigned char* a = addressBytes(netIf.addr, &n);
  const unsigned char* mask = addressBytes(netIf.mask, &m);
  const unsigned char* b = addressBytes(other, &o);
  for (size_t i = 0; i < n; ++i) {
    if ((a[i] & mask[i]) != (b[i] & mask[i])) return false;
  }
  return true;
}

// Rank in the default order of net_if.h (smaller is better).
int defaultRank(const NetIf& netIf, const NetIfPolicy& policy) {
  if (policy.haveCommId && sameSubnet(netIf, policy.commId)) return 0;
  if (startsWith(netIf.name, "ib")) return 1;
  if (isLoopback(netIf)) return 4;
  if (startsWith(netIf.name, "docker")) return 3;
  if (startsWith(netIf.name, "virbr")) return 5;
  return 2;
}

struct IfnameSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
};

IfnameSpec parseIfname(std::string_view text) {
  IfnameSpec spec;
  text = trimWhitespace(text);
  if (!text.empty() && text[0] == '^') {
    spec.exclude = true;
    text.remove_prefix(1);
  }
  if (!text.empty() && text[0] == '=') {
    spec.exact = true;
    text.remove_prefix(1);
  }
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = trimWhitespace(text.substr(0, comma));
    if (!item.empty()) spec.names.emplace_back(item);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return spec;
}

// Index of the first spec entry that matches `name`, or -1.
int matchIfname(const IfnameSpec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.names.size(); ++i) {
    if (spec.exact ? name == spec.names[i] : startsWith(name, spec.names[i])) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

std::vector<NetIf> netIfSelect(const std::vector<NetIf>& all, const NetIfPolicy& policy) {
  IfnameSpec spec = parseIfname(policy.ifname);
  bool useSpec = !spec.names.empty();
  struct Candidate {
    int rank;
    int familyRank;
    size_t order;
  };
  std::vector<Candidate> keep;
  for (size_t i = 0; i < all.size(); ++i) {
    const NetIf& netIf = all[i];
    int family = netIf.addr.sa.sa_family;
    if ((netIf.flags & IFF_UP) == 0 || (netIf.flags & IFF_RUNNING) == 0) continue;
    if (family != AF_INET && family != AF_INET6) continue;
    if (policy.family != AF_UNSPEC && family != policy.family) continue;
    if (isLinkLocal6(netIf.addr)) continue;
    int rank = defaultRank(netIf, policy);
    if (useSpec) {
      int match = matchIfname(spec, netIf.name);
      if (spec.exclude ? match >= 0 : match < 0) continue;
      if (!spec.exclude) rank = match;
    }
    keep.push_back({rank, family == AF_INET ? 0 : 1, i});
  }
  std::stable_sort(keep.begin(), keep.end(), [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.familyRank < b.familyRank;
  });
  std::vector<NetIf> out;
  out.reserve(keep.size());
  for (const Candidate& c : keep) out.push_back(all[c.order]);
  return out;
}

ncclResult_t netIfList(std::vector<NetIf>* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    int err = errno;
    WARN("getifaddrs() failed: %s (errno %d); cannot choose a network interface", strerror(err), err);
    return ncclSystemError;
  }
  out->clear();
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    size_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    NetIf netIf;
    netIf.name = ifa->ifa_name;
    netIf.flags = ifa->ifa_flags;
    std::memcpy(&netIf.addr, ifa->ifa_addr, len);
    if (ifa->ifa_netmask != nullptr && ifa->ifa_netmask->sa_family == family) {
      std::memcpy(&netIf.mask, ifa->ifa_netmask, len);
    }
    socketAddressSetPort(&netIf.addr, 0);
    out->push_back(std::move(netIf));
  }
  freeifaddrs(list);
  return ncclSuccess;
}

int netIfSpeedMbps(const NetIf& netIf, const std::string& sysClassNet) {
  std::ifstream file(sysClassNet + "/" + netIf.name + "/speed");
  long long mbps = 0;
  // The file exists for most interfaces; reading it fails (EINVAL) for loopback and for links that
  // are down, and a few drivers write -1 or 0 for "unknown".
  if (file >> mbps && mbps > 0 && mbps <= std::numeric_limits<int>::max()) return static_cast<int>(mbps);
  return isLoopback(netIf) ? kLoopbackSocketMbps : kUnknownSocketMbps;
}

std::string netIfToString(const NetIf& netIf) {
  char host[INET6_ADDRSTRLEN] = "?";
  size_t size = 0;
  inet_ntop(netIf.addr.sa.sa_family, addressBytes(netIf.addr, &size), host, sizeof(host));
  std::string state = (netIf.flags & IFF_UP) == 0 ? " down" : (netIf.flags & IFF_RUNNING) == 0 ? " not running" : "";
  return netIf.name + " " + host + state;
}

ncclResult_t netIfFindUsable(const SocketAddress* commId, std::vector<NetIf>* out) {
  NetIfPolicy policy;
  policy.ifname = paramString(ParamId::kSocketIfname);
  const std::string& familyText = paramString(ParamId::kSocketFamily);
  if (equalsIgnoreCase(familyText, "AF_INET")) {
    policy.family = AF_INET;
  } else if (equalsIgnoreCase(familyText, "AF_INET6")) {
    policy.family = AF_INET6;
  } else if (!trimWhitespace(familyText).empty()) {
    WARN("NCCL_SOCKET_FAMILY=%s is neither AF_INET nor AF_INET6; ignoring it", familyText.c_str());
  }
  if (commId != nullptr) {
    policy.haveCommId = true;
    policy.commId = *commId;
  }
  std::vector<NetIf> all;
  NCCLCHECK(netIfList(&all));
  std::vector<NetIf> chosen = netIfSelect(all, policy);
  if (chosen.empty()) {
    std::string seen;
    for (const NetIf& netIf : all) seen += (seen.empty() ? "" : ", ") + netIfToString(netIf);
    WARN(
        "No usable network interface (NCCL_SOCKET_IFNAME=\"%s\", NCCL_SOCKET_FAMILY=\"%s\"; an "
        "interface must be up and running); this host has: %s",
        policy.ifname.c_str(), familyText.c_str(), seen.empty() ? "no IP interfaces" : seen.c_str());
    return ncclSystemError;
  }
  *out = std::move(chosen);
  return ncclSuccess;
}

ncclResult_t netIfFindBootstrap(const SocketAddress* commId, NetIf* out) {
  std::vector<NetIf> usable;
  NCCLCHECK(netIfFindUsable(commId, &usable));
  *out = usable.front();
  INFO(kLogBootstrap | kLogInit, "Bootstrap interface: %s", netIfToString(*out).c_str());
  return ncclSuccess;
}

}  // namespace braid
