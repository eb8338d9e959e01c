/*
 * nccl_device/gin.h -- GIN, GPU-initiated networking: puts, gets and signals to ranks beyond the
 * LSA team, driven from device code through the network (ncclGin, ncclGin_BackendMask<mask>).
 *
 * A device communicator has GIN when ncclDevCommCreate was asked for GIN resources; it then has
 * ginConnectionCount connections, each with one transport (comm.ginNetDeviceTypes) and contexts.
 * An ncclGin is one context: context index i is context i / count of connection i % count. This
 * header drives the proxy transport (NCCL_NET_DEVICE_GIN_PROXY, nccl_device/gin_proxy_device.h),
 * in which device code posts descriptors that a host thread of the library carries out. Building
 * an ncclGin on a communicator without GIN, or on a connection of another transport, stops the
 * kernel with a message (__trap): there is nothing to issue the operations through.
 *
 * Semantics are NCCL 2.32.3's. Every call is made by a whole cooperative group (coop): it syncs
 * the group, one thread (thread_rank 0) issues or waits, and it syncs again; a timed wait returns
 * thread 0's result (ncclTimeout once timeoutCycles clock64 cycles have passed), the other
 * threads' is ncclSuccess. Peers are ranks of `team`, translated to world ranks and then to GIN
 * ranks (world rank / comm.ginConnectionStride). Counters and signals are compared "rolling" over
 * `bits` bits, so that they may wrap. Waits give up once the communicator is aborted (untimed ones
 * return, timed ones return ncclTimeout).
 *
 * Descriptors are built in registers, so a DescriptorSmem argument is accepted and not used.
 * Windows of several physical segments (ncclGin_SegmentMixed/HostNuma on such windows) are not
 * supported: such a call stops the kernel with a message. The C entry points of NVIDIA's header
 * for LLVM bitcode (ncclGin_C, ncclGinPut, ...) are not declared.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_GIN_H_
#define NCCL_DEVICE_GIN_H_

#include "core.h"
#include "gin_actions.h"
#include "gin_proxy.h"
#include "gin_proxy_device.h"

/* Options of a GIN operation, and the GIN transports this header drives (the proxy: bit
 * NCCL_NET_DEVICE_GIN_PROXY). */
enum ncclGinOptFlags {
  ncclGinOptFlagsDefault = 0,
  ncclGinOptFlagsMaySkipCreditCheck = (1 << 0),
  ncclGinOptFlagsAggregateRequests = (1 << 1),
};
#define NCCL_GIN_BACKEND_MASK_ALL (1u << 2)
/* The memory a GIN segment lives in (C names of the ncclGin_Segment* tags). */
typedef enum ncclGinSegmentType {
  ncclGinSegmentTypeDevice = 0,
  ncclGinSegmentTypeMixed = 1,
  ncclGinSegmentTypeHostNuma = 2,
} ncclGinSegmentType_t;

#ifdef __CUDACC__
/* How the threads of a GIN context share its network resources. */
enum ncclGinResourceSharingMode : uint8_t {
  NCCL_GIN_RESOURCE_SHARING_GPU = 0,
  NCCL_GIN_RESOURCE_SHARING_CTA = 1,
  NCCL_GIN_RESOURCE_SHARING_THREAD = 2,
};

/* A GIN context as a transport sees it (the transport is an ncclNetDeviceType value). */
struct ncclGinCtx {
  unsigned backendMask;
  int backend;
  int rank;
  int nRanks;
  void* handle;
  int contextId;
  uint8_t resourceSharingMode;
};
template <unsigned backendMask>
struct ncclGinCtx_M : ncclGinCtx {};

enum ncclGinSignalType {
  NCCL_GIN_SIGNAL_TYPE_NONE,
  NCCL_GIN_SIGNAL_TYPE_VA,
  NCCL_GIN_SIGNAL_TYPE_INDEXED,
};

/* A GIN context of a device communicator, restricted to the transports in backendMask. */
template <unsigned backendMask>
struct ncclGin_BackendMask {
  ncclDevComm const& comm;
  uint32_t nConnections : 8, connectionId : 8, _ginBackend : 8;
  uint32_t contextId;
  ncclGinResourceSharingMode resourceSharingMode;
  void* _ginHandle;
  uint64_t* _signalShadows;

  NCCL_DEVICE_INLINE ncclGin_BackendMask(ncclDevComm const& comm_, int contextIndex,
                                         ncclGinResourceSharingMode mode = NCCL_GIN_RESOURCE_SHARING_GPU)
      : comm(comm_),
        nConnections(0),
        connectionId(0),
        _ginBackend(0),
        contextId(0),
        resourceSharingMode(mode),
        _ginHandle(nullptr),
        _signalShadows(nullptr) {
    uint32_t count = comm_.ginConnectionCount;
    if (count == 0) {
      nccl::detail::ginFail(
          "this device communicator has no GIN connection (ask ncclDevCommCreate for GIN resources, "
          "e.g. ginContextCount, ginSignalCount or ginCounterCount in ncclDevCommRequirements)");
      return;
    }
    nConnections = count;
    connectionId = uint32_t(contextIndex) % count;
    contextId = uint32_t(contextIndex) / count;
    _ginBackend = comm_.ginNetDeviceTypes[connectionId];
    _ginHandle = comm_.ginHandles[connectionId];
    _signalShadows = comm_.ginSignalShadows + contextIndex * comm_.ginSignalCount;
    nccl::detail::ginCheckBackend(int(_ginBackend), backendMask);
  }

  /* ---- Internals ---- */
  NCCL_DEVICE_INLINE ncclGinProxyGpuCtx_t* _proxyCtx() const {
    return nccl::detail::ginproxy::context(_ginHandle, contextId);
  }
  /* A world rank, or a count of them, as a GIN rank (connections may skip ranks). */
  NCCL_DEVICE_INLINE int _ginRankOfWorld(int world) const {
    if (comm.ginConnectionStride == 1) return world;
    return int(
        nccl::utility::idivFast32(uint32_t(world), uint32_t(comm.ginConnectionStride), comm.ginConnectionStride_rcp32));
  }
  NCCL_DEVICE_INLINE int _ginRank(ncclTeam team, int peer) const {
    return _ginRankOfWorld(ncclTeamRankToWorld(comm, team, peer));
  }
  NCCL_DEVICE_INLINE ncclGinCtx_M<backendMask> _makeCtx() const {
    ncclGinCtx_M<backendMask> ctx;
    ctx.backendMask = backendMask;
    ctx.backend = int(_ginBackend);
    ctx.rank = _ginRankOfWorld(comm.rank);
    ctx.nRanks = _ginRankOfWorld(comm.nRanks);
    ctx.handle = _ginHandle;
    ctx.contextId = int(contextId);
    ctx.resourceSharingMode = uint8_t(resourceSharingMode);
    return ctx;
  }
  NCCL_DEVICE_INLINE uint64_t _winHandle(ncclWindow_t w) const {
    return nccl::detail::ginWindowHandle(w, comm.backendIndex, connectionId);
  }

  NCCL_DEVICE_INLINE bool _supportsStrongSignal() const { return true; }
  /* Whether a signal's arrival implies that every put received before it, from any peer, has landed. */
  NCCL_DEVICE_INLINE bool _flushesAllPutsOnAnySignal() const {
    return nccl::utility::loadConst(&_proxyCtx()->flushesAllPutsOnAnySignal);
  }

  /* ---- Data movement ---- */

  /* bytes from this rank's srcWnd + srcOffset to peer's dstWnd + dstOffset; remoteAction happens
   * at the peer once the data has landed, localAction here once the source may be reused.
   * givenRelease: the scope at which the caller has already released what the put reads. */
  template <typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None, typename SegmentType = ncclGin_SegmentDevice>
  NCCL_DEVICE_INLINE void put(ncclTeam team, int peer, ncclWindow_t dstWnd, size_t dstOffset, ncclWindow_t srcWnd,
                              size_t srcOffset, size_t bytes, RemoteAction remoteAction = ncclGin_None{},
                              LocalAction localAction = ncclGin_None{}, Coop coop = ncclCoopThread{},
                              DescriptorSmem = ncclGin_None{},
                              cuda::thread_scope givenRelease = cuda::thread_scope_thread,
                              cuda::thread_scope = cuda::thread_scope_device, uint32_t = ncclGinOptFlagsDefault,
                              SegmentType segments = ncclGin_SegmentDevice{}) const {
    coop.sync();
    if (coop.thread_rank() == 0) {
      nccl::detail::ginCheckSegments(segments, dstWnd, srcWnd);
      nccl::detail::ginproxy::Payload p{};
      p.dstHandle = _winHandle(dstWnd);
      p.dstOffset = nccl::detail::ginWindowOffset(dstWnd, dstOffset);
      p.srcHandle = _winHandle(srcWnd);
      p.srcOffset = nccl::detail::ginWindowOffset(srcWnd, srcOffset);
      p.bytes = bytes;
      nccl::detail::ginCounterOf(localAction, p);
      nccl::detail::ginproxy::put(_proxyCtx(), _ginRank(team, peer), p,
                                  nccl::detail::ginSignalOf(comm, connectionId, remoteAction), givenRelease,
                                  comm.abortFlag);
    }
    coop.sync();
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
            typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  NCCL_DEVICE_INLINE void put(ncclTeam team, int peer, ncclSymPtr<T> dstElts, ncclSymPtr<T> srcElts, size_t nElts,
                              RemoteAction remoteAction = ncclGin_None{}, LocalAction localAction = ncclGin_None{},
                              Coop coop = ncclCoopThread{}, DescriptorSmem descriptor = ncclGin_None{},
                              cuda::thread_scope givenRelease = cuda::thread_scope_thread,
                              cuda::thread_scope requiredRelease = cuda::thread_scope_device,
                              uint32_t optFlags = ncclGinOptFlagsDefault,
                              SegmentType segments = ncclGin_SegmentDevice{}) const {
    put(team, peer, dstElts.window, dstElts.offset, srcElts.window, srcElts.offset, nElts * sizeof(T), remoteAction,
        localAction, coop, descriptor, givenRelease, requiredRelease, optFlags, segments);
  }

  /* `value` (at most 8 bytes) to peer's dstWnd + dstOffset, carried in the descriptor itself. */
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void putValue(ncclTeam team, int peer, ncclWindow_t dstWnd, size_t dstOffset, T value,
                                   RemoteAction remoteAction = ncclGin_None{}, Coop coop = ncclCoopThread{},
                                   DescriptorSmem = ncclGin_None{},
                                   cuda::thread_scope givenRelease = cuda::thread_scope_thread,
                                   cuda::thread_scope = cuda::thread_scope_device,
                                   uint32_t = ncclGinOptFlagsDefault) const {
    static_assert(sizeof(T) <= 8, "putValue carries at most 8 bytes");
    coop.sync();
    if (coop.thread_rank() == 0) {
      nccl::detail::ginproxy::Payload p{};
      p.dstHandle = _winHandle(dstWnd);
      p.dstOffset = nccl::detail::ginWindowOffset(dstWnd, dstOffset);
      p.bytes = sizeof(T);
      p.hasInline = true;
      memcpy(&p.inlineBits, &value, sizeof(T));
      nccl::detail::ginproxy::put(_proxyCtx(), _ginRank(team, peer), p,
                                  nccl::detail::ginSignalOf(comm, connectionId, remoteAction), givenRelease,
                                  comm.abortFlag);
    }
    coop.sync();
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void putValue(ncclTeam team, int peer, ncclSymPtr<T> dst, T value,
                                   RemoteAction remoteAction = ncclGin_None{}, Coop coop = ncclCoopThread{},
                                   DescriptorSmem descriptor = ncclGin_None{},
                                   cuda::thread_scope givenRelease = cuda::thread_scope_thread,
                                   cuda::thread_scope requiredRelease = cuda::thread_scope_device,
                                   uint32_t optFlags = ncclGinOptFlagsDefault) const {
    putValue(team, peer, dst.window, dst.offset, value, remoteAction, coop, descriptor, givenRelease, requiredRelease,
             optFlags);
  }

  /* The remote action alone, no data. */
  template <typename RemoteAction, typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void signal(ncclTeam team, int peer, RemoteAction remoteAction, Coop coop = ncclCoopThread(),
                                 DescriptorSmem = ncclGin_None{},
                                 cuda::thread_scope givenRelease = cuda::thread_scope_thread,
                                 cuda::thread_scope = cuda::thread_scope_device,
                                 uint32_t = ncclGinOptFlagsDefault) const {
    coop.sync();
    if (coop.thread_rank() == 0) {
      nccl::detail::ginproxy::put(_proxyCtx(), _ginRank(team, peer), nccl::detail::ginproxy::Payload{},
                                  nccl::detail::ginSignalOf(comm, connectionId, remoteAction), givenRelease,
                                  comm.abortFlag);
    }
    coop.sync();
  }

  /* bytes from peer's remoteWnd + remoteOffset to this rank's localWnd + localOffset; complete
   * once a later flushAsync/wait or flush returns. */
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  NCCL_DEVICE_INLINE void get(ncclTeam team, int peer, ncclWindow_t remoteWnd, size_t remoteOffset,
                              ncclWindow_t localWnd, size_t localOffset, size_t bytes, Coop coop = ncclCoopThread{},
                              DescriptorSmem = ncclGin_None{}, uint32_t = ncclGinOptFlagsDefault,
                              SegmentType segments = ncclGin_SegmentDevice{}) const {
    coop.sync();
    if (coop.thread_rank() == 0) {
      nccl::detail::ginCheckSegments(segments, remoteWnd, localWnd);
      nccl::detail::ginproxy::get(_proxyCtx(), _ginRank(team, peer), _winHandle(remoteWnd),
                                  nccl::detail::ginWindowOffset(remoteWnd, remoteOffset), _winHandle(localWnd),
                                  nccl::detail::ginWindowOffset(localWnd, localOffset), bytes, comm.abortFlag);
    }
    coop.sync();
  }

  /* ---- Completion ---- */

  /* A request that wait() completes once everything issued to `peer` so far has been carried
   * out: puts' sources read (not necessarily landed), gets landed. */
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void flushAsync(ncclTeam team, uint32_t peer, ncclGinRequest_t* outRequest,
                                     Coop coop = ncclCoopThread{}, uint32_t = ncclGinOptFlagsDefault,
                                     DescriptorSmem = ncclGin_None{}) const {
    coop.sync();
    if (coop.thread_rank() == 0) {
      nccl::detail::ginproxy::Request req = nccl::detail::ginproxy::requestFor(_proxyCtx(), _ginRank(team, int(peer)));
      memcpy(outRequest, &req, sizeof(req));
    }
    coop.sync();
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void wait(ncclGinRequest_t& request, Coop coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                               cuda::memory_order ord = cuda::memory_order_acquire) const {
    (void)_wait<false>(request, coop, ord, 0);
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE ncclResult_t wait(ncclGinRequest_t& request, Coop coop, DescriptorSmem, cuda::memory_order ord,
                                       uint64_t timeoutCycles) const {
    return _wait<true>(request, coop, ord, timeoutCycles);
  }
  template <bool kTimed, typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t _wait(ncclGinRequest_t& request, Coop coop, cuda::memory_order ord,
                                        uint64_t timeoutCycles) const {
    ncclResult_t ret = ncclSuccess;
    coop.sync();
    if (coop.thread_rank() == 0) {
      nccl::detail::ginproxy::Request req;
      memcpy(&req, &request, sizeof(req));
      ret = nccl::detail::ginproxy::complete<kTimed>(_proxyCtx(), _ginRankOfWorld(comm.rank), req, ord, comm.abortFlag,
                                                     timeoutCycles);
    }
    coop.sync();
    return ret;
  }

  /* Everything this context issued to any peer carried out (the group's threads share the peers).
   * The timed form waits for the rings only, as NCCL's does: it does not flush gets. */
  template <typename Coop, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void flush(Coop coop, cuda::memory_order ord = cuda::memory_order_acquire,
                                DescriptorSmem = ncclGin_None{}) const {
    using namespace nccl::detail::ginproxy;
    ncclGinProxyGpuCtx_t* ctx = _proxyCtx();
    int self = _ginRankOfWorld(comm.rank), nPeers = _ginRankOfWorld(comm.nRanks);
    coop.sync();
    NVCC_PRAGMA_UNROLL_DISABLED
    for (int pe = coop.thread_rank(); pe < nPeers; pe += coop.size()) {
      (void)complete<false>(ctx, self, requestFor(ctx, pe), ord, comm.abortFlag, 0);
    }
    coop.sync();
  }
  template <typename Coop, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE ncclResult_t flush(Coop coop, cuda::memory_order ord, DescriptorSmem,
                                        uint64_t timeoutCycles) const {
    ncclGinProxyGpuCtx_t* ctx = _proxyCtx();
    int nPeers = _ginRankOfWorld(comm.nRanks);
    ncclResult_t ret = ncclSuccess;
    coop.sync();
    uint64_t start = uint64_t(clock64());
    NVCC_PRAGMA_UNROLL_DISABLED
    for (int pe = coop.thread_rank(); pe < nPeers && ret == ncclSuccess; pe += coop.size()) {
      ret = nccl::detail::ginproxy::drain<true>(ctx, pe, ord, comm.abortFlag, start, timeoutCycles);
    }
    coop.sync();
    return ret;
  }

  /* ---- Counters (raised here when a put's source has been read; at most 56 bits) ---- */

  NCCL_DEVICE_INLINE uint64_t* _counterPtr(ncclGinCounter_t counter) const {
    return nccl::utility::loadConst(&_proxyCtx()->counters) + counter;
  }
  NCCL_DEVICE_INLINE uint64_t readCounter(ncclGinCounter_t counter, int bits = 56,
                                          cuda::memory_order ord = cuda::memory_order_acquire) const {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> ref(*_counterPtr(counter));
    return nccl::detail::ginLowBits(ref.load(nccl::utility::acquireOrderOf(ord)), bits);
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitCounter(Coop coop, ncclGinCounter_t counter, uint64_t least, int bits = 56,
                                      cuda::memory_order ord = cuda::memory_order_acquire) const {
    (void)_waitWord<false>(coop, _counterPtr(counter), nullptr, least, bits, ord, 0);
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t waitCounter(Coop coop, ncclGinCounter_t counter, uint64_t least, int bits,
                                              cuda::memory_order ord, uint64_t timeoutCycles) const {
    return _waitWord<true>(coop, _counterPtr(counter), nullptr, least, bits, ord, timeoutCycles);
  }
  /* Must not race with puts that raise the counter. */
  NCCL_DEVICE_INLINE void resetCounter(ncclGinCounter_t counter) const { *_counterPtr(counter) = 0; }

  /* The group waits, through thread 0, until least <= *word - *offset (no offset: 0). The offset
   * is read after the group's sync: a reset by any of its threads before the call counts. */
  template <bool kTimed, typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t _waitWord(Coop coop, uint64_t* word, uint64_t const* offset, uint64_t least, int bits,
                                            cuda::memory_order ord, uint64_t timeoutCycles) const {
    ncclResult_t ret = ncclSuccess;
    coop.sync();
    if (coop.thread_rank() == 0) {
      ret = nccl::detail::ginWaitAtLeast<kTimed>(word, offset ? *offset : 0, least, bits, ord, comm.abortFlag,
                                                 timeoutCycles);
    }
    coop.sync();
    return ret;
  }

  /* ---- Signals ---- */

  /* Indexed signals: the proxy raises signals[id]; a reset moves signalOffsets[id] instead of
   * writing the signal, which the host owns. Values read are relative to the offset. */
  NCCL_DEVICE_INLINE uint64_t* _signalPtr(ncclGinSignal_t signal) const {
    return nccl::utility::loadConst(&_proxyCtx()->signals) + signal;
  }
  NCCL_DEVICE_INLINE uint64_t* _signalOffsetPtr(ncclGinSignal_t signal) const {
    return nccl::utility::loadConst(&_proxyCtx()->signalOffsets) + signal;
  }
  NCCL_DEVICE_INLINE uint64_t readSignal(ncclGinSignal_t signal, int bits = 64,
                                         cuda::memory_order ord = cuda::memory_order_acquire) const {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> ref(*_signalPtr(signal));
    uint64_t raw = ref.load(nccl::utility::acquireOrderOf(ord));
    return nccl::detail::ginLowBits(raw - *_signalOffsetPtr(signal), bits);
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignal(Coop coop, ncclGinSignal_t signal, uint64_t least, int bits = 64,
                                     cuda::memory_order ord = cuda::memory_order_acquire) const {
    (void)_waitWord<false>(coop, _signalPtr(signal), _signalOffsetPtr(signal), least, bits, ord, 0);
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t waitSignal(Coop coop, ncclGinSignal_t signal, uint64_t least, int bits,
                                             cuda::memory_order ord, uint64_t timeoutCycles) const {
    return _waitWord<true>(coop, _signalPtr(signal), _signalOffsetPtr(signal), least, bits, ord, timeoutCycles);
  }
  /* Sets the signal to zero (and its shadow); must not race with puts that raise it. */
  NCCL_DEVICE_INLINE void resetSignal(ncclGinSignal_t signal) const {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> ref(*_signalPtr(signal));
    *_signalOffsetPtr(signal) = ref.load(cuda::memory_order_relaxed);
    _signalShadows[signal] = 0;
  }

  /* VA signals: a 64-bit word of a window, raised in place. */
  NCCL_DEVICE_INLINE uint64_t readSignal(ncclWindow_t signalWindow, size_t signalOffset, int bits = 64,
                                         cuda::memory_order ord = cuda::memory_order_acquire) const {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> ref(
        *static_cast<uint64_t*>(ncclGetLocalPointer(signalWindow, signalOffset)));
    return nccl::detail::ginLowBits(ref.load(nccl::utility::acquireOrderOf(ord)), bits);
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignal(Coop coop, ncclWindow_t signalWindow, size_t signalOffset, uint64_t least,
                                     int bits = 64, cuda::memory_order ord = cuda::memory_order_acquire) const {
    uint64_t* word = static_cast<uint64_t*>(ncclGetLocalPointer(signalWindow, signalOffset));
    (void)_waitWord<false>(coop, word, nullptr, least, bits, ord, 0);
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t waitSignal(Coop coop, ncclWindow_t signalWindow, size_t signalOffset, uint64_t least,
                                             int bits, cuda::memory_order ord, uint64_t timeoutCycles) const {
    uint64_t* word = static_cast<uint64_t*>(ncclGetLocalPointer(signalWindow, signalOffset));
    return _waitWord<true>(coop, word, nullptr, least, bits, ord, timeoutCycles);
  }
  NCCL_DEVICE_INLINE void resetSignal(ncclWindow_t signalWindow, size_t signalOffset) const {
    *static_cast<uint64_t*>(ncclGetLocalPointer(signalWindow, signalOffset)) = 0;
  }

  /* Shadows: one 64-bit word per indexed signal of this context, the program's to use (only
   * increaseSignalShadow and resetSignal change it here). */
  NCCL_DEVICE_INLINE uint64_t* getSignalShadowPtr(ncclGinSignal_t signal) const { return &_signalShadows[signal]; }
  NCCL_DEVICE_INLINE void increaseSignalShadow(ncclGinSignal_t signal, uint64_t delta) const {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_block>(_signalShadows[signal])
        .fetch_add(delta, cuda::memory_order_relaxed);
  }
  /* Until the signal reaches its shadow. */
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignalMeetShadow(Coop coop, ncclGinSignal_t signal, int bits = 64,
                                               cuda::memory_order ord = cuda::memory_order_acquire) const {
    coop.sync();
    if (coop.thread_rank() == 0) {
      (void)nccl::detail::ginWaitAtLeast<false>(_signalPtr(signal), *_signalOffsetPtr(signal), _signalShadows[signal],
                                                bits, ord, comm.abortFlag, 0);
    }
    coop.sync();
  }
  /* Until the signal exceeds its shadow by leastDelta; the shadow then takes the signal's value,
   * and every thread of the group gets the old shadow (before) and the increase (delta). */
  template <typename Coop, typename Uint>
  NCCL_DEVICE_INLINE void waitSignalFollowShadow(Coop coop, ncclGinSignal_t signal, Uint leastDelta, Uint* before,
                                                 Uint* delta, int bits = 64,
                                                 cuda::memory_order ord = cuda::memory_order_acquire) const {
    coop.sync();
    /* Thread 0 reads the shadow, waits and moves it; the others take both values from it, since
     * they could otherwise read the shadow after thread 0 has moved it. */
    ulonglong2 seen = make_ulonglong2(0, 0);
    if (coop.thread_rank() == 0) {
      seen.x = _signalShadows[signal];
      uint64_t offset = *_signalOffsetPtr(signal);
      cuda::atomic_ref<uint64_t, cuda::thread_scope_system> ref(*_signalPtr(signal));
      cuda::memory_order acquire = nccl::utility::acquireOrderOf(ord);
      uint64_t least = seen.x + uint64_t(leastDelta) + offset;
      uint32_t spins = 0;
      NVCC_PRAGMA_UNROLL_DISABLED
      do {
        seen.y = ref.load(acquire);
      } while (!nccl::utility::rollingLessEq<uint64_t>(least, seen.y, bits) &&
               !nccl::utility::testAbort(comm.abortFlag, spins));
      seen.y -= offset;
      _signalShadows[signal] = seen.y;
    }
    if (ncclCoopWithinWarp(coop) && bits <= 32) {
      uint2 low = ncclCoopBcast(coop, make_uint2(uint32_t(seen.x), uint32_t(seen.y)), 0, /*entrySync=*/false);
      seen = make_ulonglong2(low.x, low.y);
    } else {
      seen = ncclCoopBcast(coop, seen, 0, /*entrySync=*/false);
    }
    uint64_t before64 = seen.x, after64 = seen.y;
    *before = Uint(nccl::detail::ginLowBits(before64, bits));
    *delta = Uint(nccl::detail::ginLowBits(after64 - before64, bits));
  }
};

/* A context that may use any transport, and one limited to one (an ncclNetDeviceType value). */
using ncclGin = ncclGin_BackendMask<NCCL_GIN_BACKEND_MASK_ALL>;
template <int backend>
using ncclGin_BackendOne = ncclGin_BackendMask<(1u << backend)>;
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_GIN_H_ */
