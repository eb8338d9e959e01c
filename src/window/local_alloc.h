// The physical allocation behind this rank's part of a window: found from the user's pointer,
// checked (GPU memory of the communicator's device, mapped through cuMem, the window inside one
// allocation and 4 KiB-aligned in it), retained, and exported as a file descriptor when a peer
// process of this host maps it.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_driver.h"
#include "util/unique_fd.h"
#include "window/flat_range.h"

namespace braid::window {

struct LocalAllocation {
  AllocHandle handle;
  char* allocBase = nullptr;
  uint64_t allocBytes = 0;
  uint64_t memOffset = 0;
  uint64_t granularity = 0;
  UniqueFd fd;  // valid when exported
};

// `what` leads every WARN ("ncclCommWindowRegister (rank 2)"). Bad memory is ncclInvalidArgument,
// a window over several allocations or an allocation that cannot be shared ncclInvalidUsage.
[[nodiscard]] ncclResult_t prepareLocalAllocation(const CudaDriver* drv, int cudaDev, void* buff, uint64_t bytes,
                                                  bool exportFd, const std::string& what, LocalAllocation* out);

}  // namespace braid::window
