// What this GPU and driver allow: windows need CUDA's virtual memory management; one-sided
// operations also need 64-bit stream memory operations and, as in NCCL, a driver of CUDA 12.5 or
// later.
#pragma once

#include <string>

#include "cuda/cuda_driver.h"

namespace braid::window {

// False, with *why saying what is missing (for a WARN).
bool windowSupport(const CudaDriver* drv, int cudaDev, std::string* why);
bool rmaSupport(const CudaDriver* drv, int cudaDev, std::string* why);

}  // namespace braid::window
