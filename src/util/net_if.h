// Which network interface the bootstrap (and other control sockets) use.
//
// Only interfaces that are UP and RUNNING, with an IPv4 or IPv6 address, count; IPv6 link-local
// addresses (fe80::/10) are skipped because they need a scope id that other hosts cannot use.
//
// NCCL_SOCKET_IFNAME, if set, decides alone: a comma-separated list of name prefixes ("eth,ib");
// a leading '^' turns it into a list to exclude ("^docker,lo"); a leading '=' (after the '^' if
// any) makes the names exact ("=eth0", "^=eth1"). With an include list, interfaces are preferred in
// the order of the list; with an exclude list, the remaining ones follow the default order.
//
// Default order (also within an exclude list), first match wins:
//   1. with NCCL_COMM_ID set: an interface on the same subnet as that address (it must reach it);
//   2. ib*: IP over InfiniBand, usually the fast fabric (NCCL's choice too, kept for compatibility);
//   3. anything else except loopback, docker* and virbr* (eth0, ens*, enp*, bond*, ...);
//   4. docker*;  5. loopback (lo);  6. virbr* (libvirt bridges, rarely reachable from other hosts).
// So a VM with eth0 and lo picks eth0; a container with only lo works on one host.
// NCCL_SOCKET_FAMILY=AF_INET or AF_INET6 keeps only that family; otherwise, at the same rank,
// IPv4 comes before IPv6. Ties keep the system's order.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "util/socket.h"

namespace braid {

struct NetIf {
  std::string name;
  SocketAddress addr{};  // port 0
  SocketAddress mask{};  // netmask, same family as addr
  unsigned flags = 0;    // IFF_* from getifaddrs
};

struct NetIfPolicy {
  std::string ifname;      // NCCL_SOCKET_IFNAME
  int family = AF_UNSPEC;  // NCCL_SOCKET_FAMILY
  bool haveCommId = false;
  SocketAddress commId{};  // NCCL_COMM_ID, when haveCommId
};

// The usable interfaces of `all` under `policy`, best first. Pure: no system calls, no logging.
std::vector<NetIf> netIfSelect(const std::vector<NetIf>& all, const NetIfPolicy& policy);

// The host's interface addresses (getifaddrs), in the system's order.
[[nodiscard]] ncclResult_t netIfList(std::vector<NetIf>* out);

// "eth0 192.0.2.2/AF_INET", for messages.
std::string netIfToString(const NetIf& netIf);

// What the socket network reports as an interface's speed (ncclNetProperties.speed, Mbit/s), which
// Braid's cost model reads as the network's bandwidth: the link speed from sysClassNet/NAME/speed
// when it gives one; for loopback, which has none, kLoopbackSocketMbps; otherwise
// kUnknownSocketMbps, NCCL's default for the socket network. Loopback: 6 GB/s for a rank's 4
// network channels together, the figure the ring and tree costs across emulated hosts were fitted
// with (they measured 11-12.5 GB/s of bus bandwidth at 256 MiB, so it is not optimistic).
constexpr int kLoopbackSocketMbps = 48000;
constexpr int kUnknownSocketMbps = 10000;
int netIfSpeedMbps(const NetIf& netIf, const std::string& sysClassNet = "/sys/class/net");

// Every usable interface under NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY (read now) and `commId`
// (may be null), best first; when none fits: one WARN that lists what the host has, and
// ncclSystemError.
[[nodiscard]] ncclResult_t netIfFindUsable(const SocketAddress* commId, std::vector<NetIf>* out);

// The interface the bootstrap listens on, under NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY (read
// now, so paramsReset() takes effect) and `commId` (may be null). When none fits: one WARN that
// lists what the host has, and ncclSystemError.
[[nodiscard]] ncclResult_t netIfFindBootstrap(const SocketAddress* commId, NetIf* out);

}  // namespace braid
