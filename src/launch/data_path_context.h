// What the parts of a communicator's data path (launch/comm_data_path.h) share, and nothing else:
// the communicator they serve, its device state, its way to other hosts, its share-group membership
// (the launch order every kernel goes through, and the connections it uses), its link to the
// communicator's watch (launch/watch_link.h: hang diagnosis, the kernels' abort word), and how its
// kernels are launched. The coordinator owns each of them and hands every part this context; a
// part reaches no other part through it.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <vector>

#include "device/launch_kernel.h"
#include "topo/topo.h"
#include "transport/transport.h"

struct ncclComm;

namespace braid {

class DeviceState;
class NetworkLink;
class ShareMembership;
class WatchLink;

// The transport that carries a pair topo chose (kNone never gets this far: topo fails first).
inline transport::Kind transportKind(topo::TransportKind kind) {
  switch (kind) {
    case topo::TransportKind::kP2p:
      return transport::Kind::kP2p;
    case topo::TransportKind::kNet:
      return transport::Kind::kNet;
    default:
      return transport::Kind::kShm;
  }
}

// Graph registration and zero-copy sends look at no operation smaller than this: smaller
// collectives take LL (no zero-copy), and eager operations that small pay for no capture query.
// (Eager operations go zero-copy only from BRAID_ZERO_COPY_EAGER_BYTES: reg_launch.cc, p2p_reg.cc.)
constexpr size_t kZeroCopyMinBytes = 64 << 10;

// How the communicator's kernels launch. Collective kernels: programmatic dependent launch
// (BRAID_LAUNCH_PDL) and clusters of the plan's size (plan::Decision: the config's cgaClusterSize
// or the planner's pick), on Hopper and later with kernels compiled for it (KernelArch in
// device/launch_kernel.h). The others (point-to-point, one rank's PreMulSum): the same without
// clusters. Point-to-point CTAs must all be resident at once (plan::p2pChannelsPerPeer counts
// multiprocessors, not cluster slots), and on 4 H200 clusters gained nothing clear: ring-shift
// sends of 1 GiB moved 338-347 GB/s in clusters of 2, 319 in clusters of 4, 329-336 without.
struct KernelLaunch {
  LaunchOptions coll;
  LaunchOptions plain;
  bool clusters = false;
  bool launchEventAttr = false;  // the driver records launch-completion events (CUDA 12.3 and later)

  // hopper: the GPU has the Hopper launch features and the kernels were compiled for them
  // (KernelArch in device/launch_kernel.h). Reads the driver's version.
  [[nodiscard]] ncclResult_t init(bool hopper);
  // `base` with an operation's launch-completion event (null: none) for its kernel on `stream`.
  // An eager launch with one goes without programmatic dependent launch: with it, the driver
  // records the event only once the kernel has ended, not once its CTAs began (one H200, CUDA 13.0
  // driver: a kernel that spins with a launch-completion event and programmatic stream
  // serialization still had its event pending after 500 ms, with or without clusters and with the
  // kernel's trigger at its start; without it, the event completed in 0.2 ms). Where the driver has
  // no launch-completion events (before CUDA 12.3) the event is recorded on the stream now, before
  // the launch, as NCCL does there.
  [[nodiscard]] ncclResult_t withLaunchEvent(LaunchOptions base, cudaEvent_t event, cudaStream_t stream, bool captured,
                                             LaunchOptions* out) const;
  // After a captured launch (or copy) that carried `event`: an external record of it behind the
  // work. The launch attribute (or a record before the work) alone orders the capture's own waits
  // on the event, but leaves it a captured event, which cudaEventQuery refuses after the graph's
  // replays (invalid argument; 2 H200, CUDA 13.0 driver); with the external record each replay
  // also records it where the work ends, so waits and queries outside the graph work too.
  [[nodiscard]] ncclResult_t afterCapturedLaunch(cudaEvent_t event, cudaStream_t stream, bool captured) const;
};

// Owned by the coordinator, which outlives every part that holds this context.
struct DataPathContext {
  ncclComm* comm = nullptr;
  DeviceState* device = nullptr;
  NetworkLink* net = nullptr;
  ShareMembership* share = nullptr;
  WatchLink* watch = nullptr;  // the communicator's watch: hang diagnosis of each launch
  KernelLaunch launch{};

  // The transports' view of the communicator: its ranks, FIFO sizes (NCCL_BUFFSIZE and its LL
  // siblings), network and abort flag. netLl: NET connections get LL buffers too (the rings'
  // topo::Topology::llOk).
  transport::Context transportContext(bool netLl) const;
};

}  // namespace braid
