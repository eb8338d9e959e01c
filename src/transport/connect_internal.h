// Internals of connectChannels shared by connect.cc and connect_groups.cc, and unit-tested: how the
// channels become groups (one block per peer, direction and kind) and how the blocks become the
// device-visible connection structs. Only makeGroups/fillConns/checkContext are pure host logic.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device/dev_types.h"
#include "transport/layout.h"
#include "transport/memory.h"
#include "transport/transport.h"
#include "transport/uds.h"

namespace braid::transport {

// The channels that use one peer in one direction over one kind of transport, and their blocks:
// `local` is ours (a receiver's buffers and tails, or a sender's heads), `remote` is the peer's
// matching block mapped here.
struct Group {
  int peer = -1;
  Role role = Role::kSend;
  Kind kind = Kind::kP2p;
  bool crossProcess = false;
  std::vector<int> channels;  // ascending; the i-th one uses index i of the layout
  uint64_t channelMask = 0;
  size_t buffBytes[kNumProtos] = {};
  BlockLayout layout;  // of the local block, granularity 1
  std::string what;    // "rank 0 (GPU 0) -> peer rank 1 (GPU 1), P2P send, channels 0,1"

  ExportInfo localInfo{};
  UniqueFd exportFd;  // kCuMemFd: to pass to the peer
  Block* local = nullptr;

  std::string peerUds;
  int peerCudaDev = -1;
  ExportInfo peerInfo{};
  UniqueFd importFd;
  Block* remote = nullptr;
};

// Sets nothing; restores the calling thread's current device when it goes out of scope.
class DeviceGuard {
 public:
  DeviceGuard();
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Rejects a context or channel list that cannot be connected, with one WARN saying why.
[[nodiscard]] ncclResult_t checkContext(const Context& ctx, const std::vector<ChannelLinks>& channels);

// Groups ordered by (peer, kind, role).
std::vector<Group> makeGroups(const Context& ctx, const std::vector<ChannelLinks>& channels);

// Fills send[c] and recv[c] (step 0) for every channel of every group from the groups' local and
// remote blocks.
void fillConns(const std::vector<Group>& groups, const size_t buffBytes[kNumProtos], std::vector<DevSendConn>* send,
               std::vector<DevRecvConn>* recv);

}  // namespace braid::transport
