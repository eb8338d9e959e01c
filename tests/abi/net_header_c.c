/* include/nccl_net.h compiles as C (plugin authors write C) with the layouts of NCCL's net plugin
 * ABI; built, not run: a layout change fails the build. */
#include <stddef.h>

#include "nccl_net.h"

_Static_assert(sizeof(ncclNetProperties_v8_t) == 64, "ncclNetProperties_v8_t");
_Static_assert(sizeof(ncclNetProperties_v9_t) == 104, "ncclNetProperties_v9_t");
_Static_assert(sizeof(ncclNetProperties_v11_t) == 112, "ncclNetProperties_v11_t");
_Static_assert(offsetof(ncclNetProperties_v11_t, maxP2pBytes) == 88, "maxP2pBytes");
_Static_assert(offsetof(ncclNetProperties_v11_t, maxMultiRequestSize) == 104, "maxMultiRequestSize");
_Static_assert(offsetof(ncclNetProperties_v8_t, netDeviceVersion) == 56, "v8 netDeviceVersion");
_Static_assert(offsetof(ncclNet_v11_t, finalize) == 20 * sizeof(void*), "v11 finalize slot");
_Static_assert(offsetof(ncclNet_v10_t, makeVDevice) == 19 * sizeof(void*), "v10 makeVDevice slot");
_Static_assert(offsetof(ncclNet_v8_t, irecvConsumed) == 18 * sizeof(void*), "v8 irecvConsumed slot");
_Static_assert(NCCL_NET_HANDLE_MAXSIZE == 128, "handle size");
