// The network a communicator uses between hosts: one ncclNet_v11_t table (include/nccl_net.h) and
// the context its init returned for this communicator. Everything above drives a network through
// this, the built-in socket network and (later) external plugins alike.
//
// Choice, as NCCL 2.28 makes it (docs/net-plugin-abi.md §1.2): the external plugins of
// NCCL_NET_PLUGIN (a comma list of library names or paths, a bare name also tried as
// libnccl-net-<name>.so; unset: libnccl-net.so if there is one; "none": no plugin), each seen
// through its newest table from v11 down to v8, then the built-in "Socket". The first that
// initializes and has a device wins; NCCL_NET restricts the choice to the network of that name
// (case-insensitive). A plugin that fails to load gets one line, and the next candidate is tried.
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
