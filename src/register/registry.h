// The buffer registrations of one communicator, and how a peer process can map the allocation each
// one lies in. Registering prepares the sharing (a cuMem POSIX file descriptor, or a cudaIpc handle
// for cudaMalloc memory) once; peers map it at the first operation that uses it (see
// launch/reg_exchange.h), so registering itself talks to nobody. Two kinds:
//   - local: ncclCommRegister / ncclCommDeregister, the buffers the application promised to keep;
//   - graph (NCCL_GRAPH_REGISTER): made for an operation being captured, covering the whole
//     allocation of its buffer, and released when the last graph that uses it is destroyed
//     (graph_hold.h).
// A released registration's serial is retired: the peers drop their mappings of it at the next
// exchange (launch/reg_exchange.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "register/graph_hold.h"
#include "transport/memory.h"
#include "transport/uds.h"

namespace braid::reg {

struct Registration {
  char* buff = nullptr;
  size_t size = 0;
  uint64_t serial = 0;  // unique in this process: peers cache their mapping under (rank, serial)
  char* allocBase = nullptr;
  size_t allocBytes = 0;
  // How a peer in another process maps the allocation: mechanism kCuMemFd (with `fd`), kCudaIpc,
  // or kNone (then `whyNotShared` says why; peers in this process still use it by pointer).
  transport::ExportInfo crossProcess{};
  bool vmm = false;  // a cuMem mapping: peers in this process need access granted by cuMemSetAccess
  UniqueFd fd;
  std::string whyNotShared;
  // Recorded on the stream after every eager operation that used the buffer, so that deregistering
  // it while such an operation is pending can be refused.
  cudaEvent_t lastUse = nullptr;
  bool graph = false;  // a graph registration: lives while graphRefs > 0
  int graphRefs = 0;   // graphs holding it (graph_hold.h)
};

class Registry {
 public:
  Registry() : releases_(std::make_shared<ReleaseBox>()) {}
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registers [buff, buff + size) (the current device must be the communicator's). buff must be
  // device memory and the range must lie inside one allocation (ncclInvalidArgument and a WARN
  // otherwise).
  [[nodiscard]] ncclResult_t add(void* buff, size_t size, Registration** out);
  // ncclInvalidArgument for a handle this registry does not hold; ncclInvalidUsage (nothing
  // changed) while an operation that uses the buffer is still pending on the GPU.
  [[nodiscard]] ncclResult_t remove(const void* handle);
  // The local registration that holds all of [p, p + bytes), or null.
  Registration* find(const void* p, size_t bytes) const;
  bool hasLocal() const;  // any local registration (find can only succeed then)

  // Graph registration of [buff, buff + bytes) for an operation captured on `stream`: an existing
  // graph registration of its allocation, or a new one. The graph being captured holds it until it
  // is destroyed. *out is null (and the REG line says why) when the memory cannot be registered.
  [[nodiscard]] ncclResult_t acquireForGraph(void* buff, size_t bytes, cudaStream_t stream, Registration** out);
  // Releases the graph registrations whose last graph was destroyed (call before using the registry).
  void collectGraphReleases();
  // Serials released since the last call.
  std::vector<uint64_t> takeRetired();
  // Notes that the operation just launched on `stream` uses `reg` (not while capturing: a
  // captured operation runs when its graph does, and its buffers must stay registered as long).
  [[nodiscard]] ncclResult_t noteUse(Registration* reg, cudaStream_t stream);

 private:
  // Creates a registration of [buff, buff + size) (not yet in regs_); `caller` leads the WARNs.
  [[nodiscard]] ncclResult_t make(void* buff, size_t size, const char* caller, std::unique_ptr<Registration>* out);
  void retire(std::vector<std::unique_ptr<Registration>>::iterator it);  // mutex_ held
  Registration* findGraph(const char* base, size_t length) const;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Registration>> regs_;
  std::vector<uint64_t> retired_;
  std::shared_ptr<ReleaseBox> releases_;
};

// For REG lines: "peer processes map it by cuMem POSIX file descriptor", or why they cannot.
std::string sharingSummary(const Registration& reg);

}  // namespace braid::reg
