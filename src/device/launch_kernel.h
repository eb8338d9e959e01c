// Host side of the device layer: launches the collective and point-to-point kernels. The only
// entries into device code.
#pragma once

#include <cuda_runtime.h>

#include "device/dev_types.h"

namespace braid {

// Launches args.work on `stream`: args.work.nChannels CTAs of nThreads threads each (a multiple of
// 32, at most kMaxThreads; protocols may use fewer). Asynchronous; returns the launch error, if any.
// pdl (compute capability 9.0 and later only): launched with programmatic stream serialization, so
// that the kernel is scheduled while the previous kernel of the stream ends; it waits for that
// kernel's completion (cudaGridDependencySynchronize) before it reads any memory.
// peers (optional): every rank's registered buffer of the operation (DevRegPeers), for a
// zero-copy ring; Simple Ring only (cudaErrorInvalidValue otherwise).
[[nodiscard]] cudaError_t launchCollectiveKernel(const DevKernelArgs& args, int nThreads, bool pdl, cudaStream_t stream,
                                                 const DevRegPeers* peers = nullptr);

// Launches a point-to-point kernel: args.nCtas CTAs of nThreads Simple workers (a multiple of 32,
// at most kMaxSimpleP2pWorkers) plus one poster warp each. Same pdl and error rules as above.
[[nodiscard]] cudaError_t launchP2pKernel(const DevP2pArgsSmall& args, int nThreads, bool pdl, cudaStream_t stream);
[[nodiscard]] cudaError_t launchP2pKernel(const DevP2pArgsMedium& args, int nThreads, bool pdl, cudaStream_t stream);
[[nodiscard]] cudaError_t launchP2pKernel(const DevP2pArgsLarge& args, int nThreads, bool pdl, cudaStream_t stream);

// One rank with a PreMulSum op (work.redOp): recv[i] = send[i] * scalar for work.count elements
// (in place too). Same pdl and error rules as above; cudaErrorInvalidValue for another op.
[[nodiscard]] cudaError_t launchOneRankKernel(const DevWork& work, bool pdl, cudaStream_t stream);

constexpr int kMaxThreads = 640;
constexpr int kMaxSimpleP2pWorkers = 512;

}  // namespace braid
