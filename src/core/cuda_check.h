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
