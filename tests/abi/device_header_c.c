/* include/nccl_device.h compiles as C for host code (the types and host functions of the device
 * API), and nccl_device/gin_proxy.h does on its own, with the layouts of the proxy GIN transport
 * asserted; built, not run: a change fails the build. */
#include <stddef.h>

#include "nccl_device/gin_proxy.h"
/* gin_proxy.h first: it must not depend on what the other headers bring. */
#include "nccl_device.h"

_Static_assert(sizeof(ncclGinProxyGfd_t) == 128, "a GFD is 128 bytes");
_Static_assert(_Alignof(ncclGinProxyGfd_t) == 16, "a GFD is written as 16-byte stores");
_Static_assert(offsetof(ncclGinProxyGpuCtx_t, queues) == 8, "queues");
_Static_assert(offsetof(ncclGinProxyGpuCtx_t, signalOffsets) == 48, "signalOffsets");
_Static_assert(offsetof(ncclGinProxyGpuCtx_t, flushesAllPutsOnAnySignal) == 72, "flushesAllPutsOnAnySignal");
_Static_assert(sizeof(ncclGinProxyGpuCtx_t) == 80, "ncclGinProxyGpuCtx_t");
_Static_assert(sizeof(ncclGinRequest_t) == 16, "ncclGinRequest_t");
_Static_assert(sizeof(struct ncclGinBarrierHandle) == 8 && offsetof(struct ncclGinBarrierHandle, signal0) == 0,
               "ncclGinBarrierHandle is {signal0; unused}");
