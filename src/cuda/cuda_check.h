// Check macros for the CUDA runtime and driver. On failure: one WARN with the call and the CUDA
// error text, then ncclUnhandledCudaError goes up to the caller.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "util/log.h"

#define CUDACHECK(call)                                                                                                \
  do {                                                                                                                 \
    cudaError_t braidCudaErr_ = (call);                                                                                \
    if (braidCudaErr_ != cudaSuccess) {                                                                                \
      WARN("CUDA call %s failed: %s (%s)", #call, cudaGetErrorString(braidCudaErr_), cudaGetErrorName(braidCudaErr_)); \
      return ncclUnhandledCudaError;                                                                                   \
    }                                                                                                                  \
  } while (0)

// The same, for callers that know more than the call: `what` (a std::string) says which rank, peer
// and object the call was for, and leads the WARN. The runtime's last error is cleared, so that a
// caller's later cudaGetLastError does not see a failure that has already been handled.
#define CUDACHECK_AT(what, call)                                                                         \
  do {                                                                                                   \
    cudaError_t braidCudaErr_ = (call);                                                                  \
    if (braidCudaErr_ != cudaSuccess) {                                                                  \
      (void)cudaGetLastError();                                                                          \
      WARN("%s: CUDA call %s failed: %s (%s)", (what).c_str(), #call, cudaGetErrorString(braidCudaErr_), \
           cudaGetErrorName(braidCudaErr_));                                                             \
      return ncclUnhandledCudaError;                                                                     \
    }                                                                                                    \
  } while (0)
