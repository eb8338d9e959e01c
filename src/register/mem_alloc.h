// ncclMemAlloc / ncclMemFree: device memory of the current GPU allocated through the CUDA virtual
// memory API (cuMemCreate + cuMemMap), so that it can later be shared with peer processes by a
// POSIX file descriptor (and by a fabric handle where the driver grants one) and be read and written
// in place by peer GPUs. The size is rounded up to the allocation's recommended granularity; every
// GPU that can reach this one (cudaDeviceCanAccessPeer) gets read/write access to the mapping. On a
// GPU without VMM the allocation is a plain cudaMalloc. Never a multicast object.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace braid::reg {

// How an allocation was made: what a later registration can share.
enum class AllocKind { kCuMemFabric, kCuMemPosixFd, kCudaMalloc };

// ptr non-null, size > 0 (ncclInvalidArgument and a WARN otherwise).
[[nodiscard]] ncclResult_t memAlloc(void** ptr, size_t size);
// ptr must come from memAlloc and not be freed yet (ncclInvalidArgument otherwise). Waits for the
// allocation's GPU to finish its work first, as cudaFree does.
[[nodiscard]] ncclResult_t memFree(void* ptr);

// What memAlloc made at ptr (the start of an allocation or any address inside it): its base, size
// and kind. False when ptr is not inside a live memAlloc allocation.
struct AllocInfo {
  void* base = nullptr;
  size_t bytes = 0;
  int cudaDev = -1;
  AllocKind kind = AllocKind::kCudaMalloc;
};
bool findAlloc(const void* ptr, AllocInfo* out);

}  // namespace braid::reg
