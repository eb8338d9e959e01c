/*
 * nccl_device.h -- NCCL's device API: CUDA kernels of a program's own that work on a communicator's
 * symmetric memory. The host side (nccl_device/host.h) creates a device communicator (ncclDevComm)
 * with the resources a program asks for; kernels take it by value and use:
 *   teams            ncclTeamWorld/Lsa/Rail, rank translation          nccl_device/core.h
 *   addresses        ncclGetLocalPointer, ncclGetLsaPointer, ncclGetPeerPointer, ncclSymPtr<T>
 *                                                                       nccl_device/core.h, ptr.h
 *   groups           ncclCoopCta, ncclCoopWarp, ncclCoopThread, ...     nccl_device/coop.h
 *   barriers         ncclLsaBarrierSession; ncclBarrierSession          nccl_device/lsa_barrier.h, barrier.h
 *   LL all-to-all    ncclLLA2ASession                                   nccl_device/ll_a2a.h
 *   reduce / copy    ncclLsaReduceSum, ncclLsaCopy, ncclLsaReduceSumCopy, ...  nccl_device/reduce_copy.h
 *   GIN              ncclGin, ncclGinBarrierSession over the proxy transport
 *                                                   nccl_device/gin.h, gin_barrier.h, gin_proxy*.h
 * Names, signatures, constants and the layouts of every structure the library fills are NCCL
 * 2.32.3's, so a program compiles unchanged against this header, and the library's device
 * communicators work with kernels compiled against NVIDIA's. Device code needs nvcc (C++17) and
 * libcu++ (<cuda/atomic>, part of the CUDA toolkit); a host compiler sees the types and the host
 * functions only.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_H_
#define NCCL_DEVICE_H_

#include "nccl_device/barrier.h"
#include "nccl_device/comm.h"
#include "nccl_device/coop.h"
#include "nccl_device/core.h"
#include "nccl_device/gin.h"
#include "nccl_device/gin_barrier.h"
#include "nccl_device/gin_proxy.h"
#include "nccl_device/gin_proxy_device.h"
#include "nccl_device/host.h"
#include "nccl_device/ll_a2a.h"
#include "nccl_device/lsa_barrier.h"
#include "nccl_device/ptr.h"
#include "nccl_device/reduce_copy.h"
#include "nccl_device/utility.h"

#endif /* NCCL_DEVICE_H_ */
