// Local buffer registrations of one communicator (ncclCommRegister / ncclCommDeregister): which
// user buffers the application promised to keep, and how a peer process can map the allocation
// each one lies in. Registering prepares the sharing (a cuMem POSIX file descriptor, or a cudaIpc
// handle for cudaMalloc memory) once; peers map it at the first operation that uses it (see
// launch/reg_exchange.h), so ncclCommRegister itself talks to nobody.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
  transport::UniqueFd fd;
  std::string whyNotShared;
  // Recorded on the stream after every eager operation that used the buffer, so that deregistering
  // it while such an operation is pending can be refused.
  cudaEvent_t lastUse = nullptr;
};

class Registry {
 public:
  Registry() = default;
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
  // The registration that holds all of [p, p + bytes), or null.
  Registration* find(const void* p, size_t bytes) const;
  bool empty() const;
  // Notes that the operation just launched on `stream` uses `reg` (not while capturing: a
  // captured operation runs when its graph does, and its buffers must stay registered as long).
  [[nodiscard]] ncclResult_t noteUse(Registration* reg, cudaStream_t stream);

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Registration>> regs_;
};

// "cuMem POSIX file descriptor", ...: for REG lines.
const char* sharingName(const Registration& reg);

}  // namespace braid::reg
