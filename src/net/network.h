// The network a communicator uses between hosts: one ncclNet_v11_t table (include/nccl_net.h) and
// the context its init returned for this communicator. Everything above drives a network through
// this, the built-in socket network and (later) external plugins alike.
//
// Choice: NCCL_NET names a network ("Socket" is built in; the match is case-insensitive, as NCCL's);
// unset, the first one with a device. NCCL_NET_PLUGIN is read but external plugins are not loaded
// yet: one INFO line says so and the built-in network is used (what NCCL does when a plugin fails
// to load).
#pragma once

#include <nccl.h>
#include <nccl_net.h>

#include <cstdint>
#include <memory>
#include <string>

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
  int deviceFor(int channel) const { return channel % devices_; }

 private:
  Network(const ncclNet_v11_t* table, void* context, int devices)
      : table_(table), context_(context), devices_(devices) {}
  const ncclNet_v11_t* table_;
  void* context_;
  int devices_;
};

}  // namespace braid::net
