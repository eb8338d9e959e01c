/*
 * nccl_device/gin_proxy.h -- the proxy GIN transport: how device code hands GIN operations to a
 * host thread of the library (ncclNetDeviceType NCCL_NET_DEVICE_GIN_PROXY, ginType
 * NCCL_GIN_TYPE_PROXY). The layouts are NCCL 2.32.3's, so kernels compiled against either
 * library's header drive either library's proxy.
 *
 * A GIN context of a device communicator is one ncclGinProxyGpuCtx_t (ncclDevComm.ginHandles[0]
 * points to an array of them, one per context). Per peer rank it has a ring of queueSize
 * descriptors (GFDs, 128 bytes each) in host memory the GPU writes, a producer index (pis[peer],
 * device memory: a thread claims slot pi++ with a relaxed fetch_add, waits while queueSize slots
 * are unconsumed, then writes the GFD as eight 16-byte write-through stores) and a consumer index
 * (cis[peer], written by the host once the GFD is complete: its source read, its message sent).
 * The host knows a GFD is written by the flag bit (bit 0) of each of its 16 words, clears the slot
 * before raising cis, and consumes each peer's ring in order. ci >= idx + 1 means the GFD at idx
 * is done: flush waits for ci to reach pi.
 *
 * A GFD, as 16 little-endian 64-bit words, bit 0 of each being the written flag:
 *   word 0 (header):    bits 1-4 version (NCCL_GIN_PROXY_GFD_VERSION), bits 7-63 size in bytes
 *   word 1:             source offset (bits 1-63), or the VA signal's offset (op has VASignal),
 *                       or an inline value's bits 0-47 at bits 8-55 (op has WithInline)
 *   word 2:             source window handle (bits 1-63), or the VA signal's window handle, or an
 *                       inline value's bits 48-63 at bits 8-23
 *   word 3:             destination offset (bits 1-63)
 *   word 4:             destination window handle (bits 1-63)
 *   word 5 (completion): bits 1-23 counter id, bits 24-47 signal id, bits 48-63 signal value 0-15
 *   word 6 (signal):    bit 1 strong, bits 8-23 signal value 16-31, bits 24-55 signal value 32-63
 *   word 7 (ext):       bits 8-23 the op (ncclGinProxyOp_t bits)
 *   words 8-15:         the flag only
 * Offsets are into the window's GIN registration (ginOffset4K * 4096 + offset). A window handle is
 * ncclWindow_vidmem.ginWinsDefaultBackend[connection]; Braid puts there the window's registration
 * serial, the same on every rank.
 *
 * Signals of a context are `signals` (raised by the proxy when a put lands: Inc adds 1, Add adds
 * the value) read relative to `signalOffsets` (a reset moves the offset, not the signal); counters
 * (`counters`) are raised on the issuing rank when a put's source has been read.
 *
 * This file compiles as C and C++ on the host; nccl_device/gin.h includes it.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_GIN_PROXY_H_
#define NCCL_DEVICE_GIN_PROXY_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#define NCCL_GIN_PROXY_VERSION 100
#define NCCL_GIN_PROXY_GFD_VERSION 2

/* What a GFD asks for, as bits of word 7. */
typedef enum {
  ncclGinProxyOpPut = 1 << 0,
  ncclGinProxyOpBaseMask = 1 << 0,
  ncclGinProxyOpWithInline = 1 << 1,
  ncclGinProxyOpWithCounter = 1 << 2,
  ncclGinProxyOpWithSignalInc = 1 << 3,
  ncclGinProxyOpWithSignalAdd = 1 << 4,
  ncclGinProxyOpVASignal = 1 << 5, /* a signal on a window word, alone: no data */
  ncclGinProxyOpGet = 1 << 6,
  ncclGinProxyOpFlush = 1 << 7,
} ncclGinProxyOp_t;

/* Word indices of a GFD. */
enum {
  ncclGinProxyGfdHeader = 0,
  ncclGinProxyGfdInlineLow = 1,
  ncclGinProxyGfdInlineHigh = 2,
  ncclGinProxyGfdSrcOff = 1,
  ncclGinProxyGfdSrcHandle = 2,
  ncclGinProxyGfdVASignalOff = 1,
  ncclGinProxyGfdVASignalHandle = 2,
  ncclGinProxyGfdDstOff = 3,
  ncclGinProxyGfdDstHandle = 4,
  ncclGinProxyGfdCompletion = 5,
  ncclGinProxyGfdSignalVal = 6,
  ncclGinProxyGfdHeaderExt = 7,
  ncclGinProxyGfdQwords = 16,
};

/* One descriptor: 16 words, 16-byte aligned (the device writes it as eight 16-byte stores). */
typedef struct __attribute__((aligned(16))) {
  uint64_t qword[ncclGinProxyGfdQwords];
} ncclGinProxyGfd_t;

/* One GIN context of the proxy transport, as the device reads it. */
typedef struct {
  int nranks;
  uint32_t queueSize;        /* a power of two */
  ncclGinProxyGfd_t* queues; /* nranks rings of queueSize GFDs, peer p's at p * queueSize */
  uint32_t* pis;             /* per peer: the next slot to claim */
  uint32_t* cis;             /* per peer: GFDs done (host-written, GPU-read) */
  uint64_t* counters;
  uint64_t* signals;
  uint64_t* signalOffsets;
  uint32_t* lastIssuedGet;  /* per peer: 1 + the index of its latest get */
  uint32_t* lastVisibleGet; /* per peer: the latest get known to have landed */
  bool flushesAllPutsOnAnySignal;
} ncclGinProxyGpuCtx_t;

#ifdef __cplusplus
static_assert(sizeof(ncclGinProxyGfd_t) == 128, "a GFD is 128 bytes");
static_assert(offsetof(ncclGinProxyGpuCtx_t, queues) == 8 && offsetof(ncclGinProxyGpuCtx_t, lastVisibleGet) == 64 &&
                  offsetof(ncclGinProxyGpuCtx_t, flushesAllPutsOnAnySignal) == 72 && sizeof(ncclGinProxyGpuCtx_t) == 80,
              "ncclGinProxyGpuCtx_t has NCCL 2.32.3's layout");
#endif

#endif /* NCCL_DEVICE_GIN_PROXY_H_ */
