// The network a communicator uses between hosts: one ncclNet_v11_t table (include/nccl_net.h) and
// the context its init returned for this communicator. Everything above drives a network through
// this, the built-in socket network and (later) external plugins alike.
//
// Choice, as NCCL 2.28 makes it (docs/net-plugin-abi.md §1.2): the external plugins of
// NCCL_NET_PLUGIN (a comma list of library names or paths, a bare name also tried as
// libnccl-net-<name>.so; unset: libnccl-net.so if there is one; "none": no plugin), each seen
// through its newest table from v11 down to v6, then the built-in "Socket". The first that
// initializes, has a device, and whose devices Braid can drive (getProperties: host memory,
// NCCL_PTR_HOST, and no GPU offload) wins; NCCL_NET restricts the choice to the network of that
// name (case-insensitive). A plugin that fails to load or is not used gets one line saying why
// (a WARN when NCCL_NET or NCCL_NET_PLUGIN asked for it), and the next candidate is tried.
#pragma once

#include <nccl.h>
#include <nccl_net.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace braid::net {

class Network {
 public:
  // Initializes the chosen network for the communicator `commHash`. A network NCCL_NET names that
  // does not exist, or one with no device: WARN and ncclInvalidUsage / ncclSystemError.
  [[nodiscard]] static ncclResult_t open(uint64_t commHash, std::unique_ptr<Network>* out);
  ~Network();  // finalize
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  const ncclNet_v11_t& table() const { return *table_; }
  void* context() const { return context_; }
  const char* name() const { return table_->name; }
  // The device a connection of `channel` uses (channels spread over the devices).
  int deviceFor(int channel) const { return channel % static_cast<int>(props_.size()); }
  // What getProperties said of device `dev` when the network was opened.
  const ncclNetProperties_v11_t& properties(int dev) const { return props_[static_cast<size_t>(dev)]; }
  // The bandwidth `channels` channels get together, GB/s: the speeds of the devices they use
  // (deviceFor), each counted once. 0 when no device reports a speed.
  double bandwidthGBps(int channels) const;

 private:
  Network(const ncclNet_v11_t* table, void* context, std::vector<ncclNetProperties_v11_t> props)
      : table_(table), context_(context), props_(std::move(props)) {}
  const ncclNet_v11_t* table_;
  void* context_;
  std::vector<ncclNetProperties_v11_t> props_;  // one per device, never empty
};

}  // namespace braid::net
