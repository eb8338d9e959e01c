/*
 * nccl_device/gin.h -- GIN, GPU-initiated networking: puts, gets and signals to ranks beyond the
 * LSA team, driven from device code through a NIC (ncclGin, ncclGin_BackendMask<mask>).
 *
 * Braid declares the interface so that programs which contain GIN code paths compile unchanged,
 * but it has no GIN: ncclCommQueryProperties reports ginType NCCL_GIN_TYPE_NONE, ncclDevCommCreate
 * refuses requirements for GIN resources, and a device communicator from Braid has no GIN
 * connection (ginConnectionCount 0). Constructing an ncclGin from it stops the kernel with a message
 * (__trap) instead of issuing network operations through null handles; so does any GIN call.
 * The C entry points of NVIDIA's header for LLVM bitcode (ncclGin_C, ncclGinPut, ...) are not
 * declared.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_GIN_H_
#define NCCL_DEVICE_GIN_H_

#include "core.h"

/* Options of a GIN operation, and the GIN transports a build of NCCL can drive (none here). */
enum ncclGinOptFlags {
  ncclGinOptFlagsDefault = 0,
  ncclGinOptFlagsMaySkipCreditCheck = (1 << 0),
  ncclGinOptFlagsAggregateRequests = (1 << 1),
};
#define NCCL_GIN_BACKEND_MASK_ALL 0u

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

/* Shared-memory room a put may build its network descriptor in. */
struct ncclGinDescriptorSmem {
  alignas(64) char space[128];
};

enum ncclGinSignalType {
  NCCL_GIN_SIGNAL_TYPE_NONE,
  NCCL_GIN_SIGNAL_TYPE_VA,
  NCCL_GIN_SIGNAL_TYPE_INDEXED,
};

/* What a put does at the target when it lands (remote actions) and at the source once the source
 * may be reused (local actions). Strong signals also settle the context's earlier puts to that
 * peer; weak ones only the put they ride on. The unqualified names are older spellings. */
struct ncclGin_None {};
struct ncclGin_StrongVASignalInc {
  ncclWindow_t signalWindow;
  size_t signalOffset;
};
struct ncclGin_WeakVASignalInc {
  ncclWindow_t signalWindow;
  size_t signalOffset;
};
struct ncclGin_VASignalInc {
  ncclWindow_t signalWindow;
  size_t signalOffset;
};
struct ncclGin_StrongVASignalAdd {
  ncclWindow_t signalWindow;
  size_t signalOffset;
  uint64_t value;
};
struct ncclGin_WeakVASignalAdd {
  ncclWindow_t signalWindow;
  size_t signalOffset;
  uint64_t value;
};
struct ncclGin_VASignalAdd {
  ncclWindow_t signalWindow;
  size_t signalOffset;
  uint64_t value;
};
struct ncclGin_StrongSignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_WeakSignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_SignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_StrongSignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_WeakSignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_SignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_CounterInc {
  ncclGinCounter_t counter;
};
struct ncclGin_WeakCounterInc {
  ncclGinCounter_t counter;
};
struct ncclGin_DescriptorSmem {
  ncclGinDescriptorSmem* descriptor;
};
/* What physical memory a buffer's segments are. */
struct ncclGin_SegmentDevice {};
struct ncclGin_SegmentMixed {};
struct ncclGin_SegmentHostNuma {};

namespace nccl {
namespace detail {
NCCL_DEVICE_INLINE void ginUnavailable() {
  unavailable("GIN (GPU-initiated networking; this library provides no GIN connection)");
}
}  // namespace detail
}  // namespace nccl

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
        contextId(uint32_t(contextIndex)),
        resourceSharingMode(mode),
        _ginHandle(nullptr),
        _signalShadows(nullptr) {
    nccl::detail::ginUnavailable();
  }

  NCCL_DEVICE_INLINE bool _supportsStrongSignal() const { return false; }
  NCCL_DEVICE_INLINE bool _flushesAllPutsOnAnySignal() const { return false; }

  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void flushAsync(ncclTeam, uint32_t, ncclGinRequest_t*, Coop = ncclCoopThread{},
                                     uint32_t = ncclGinOptFlagsDefault, DescriptorSmem = ncclGin_None{}) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void wait(ncclGinRequest_t&, Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                               cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE ncclResult_t wait(ncclGinRequest_t&, Coop, DescriptorSmem, cuda::memory_order, uint64_t) const {
    nccl::detail::ginUnavailable();
    return ncclInvalidUsage;
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  NCCL_DEVICE_INLINE void get(ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t, size_t, size_t,
                              Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                              uint32_t = ncclGinOptFlagsDefault, SegmentType = ncclGin_SegmentDevice{}) const {
    nccl::detail::ginUnavailable();
  }
  template <typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None, typename SegmentType = ncclGin_SegmentDevice>
  NCCL_DEVICE_INLINE void put(ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t, size_t, size_t,
                              RemoteAction = ncclGin_None{}, LocalAction = ncclGin_None{}, Coop = ncclCoopThread{},
                              DescriptorSmem = ncclGin_None{}, cuda::thread_scope = cuda::thread_scope_thread,
                              cuda::thread_scope = cuda::thread_scope_device, uint32_t = ncclGinOptFlagsDefault,
                              SegmentType = ncclGin_SegmentDevice{}) const {
    nccl::detail::ginUnavailable();
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
            typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  NCCL_DEVICE_INLINE void put(ncclTeam, int, ncclSymPtr<T>, ncclSymPtr<T>, size_t, RemoteAction = ncclGin_None{},
                              LocalAction = ncclGin_None{}, Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                              cuda::thread_scope = cuda::thread_scope_thread,
                              cuda::thread_scope = cuda::thread_scope_device, uint32_t = ncclGinOptFlagsDefault,
                              SegmentType = ncclGin_SegmentDevice{}) const {
    nccl::detail::ginUnavailable();
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void putValue(ncclTeam, int, ncclWindow_t, size_t, T, RemoteAction = ncclGin_None{},
                                   Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                                   cuda::thread_scope = cuda::thread_scope_thread,
                                   cuda::thread_scope = cuda::thread_scope_device,
                                   uint32_t = ncclGinOptFlagsDefault) const {
    nccl::detail::ginUnavailable();
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void putValue(ncclTeam, int, ncclSymPtr<T>, T, RemoteAction = ncclGin_None{},
                                   Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                                   cuda::thread_scope = cuda::thread_scope_thread,
                                   cuda::thread_scope = cuda::thread_scope_device,
                                   uint32_t = ncclGinOptFlagsDefault) const {
    nccl::detail::ginUnavailable();
  }
  template <typename RemoteAction, typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void signal(ncclTeam, int, RemoteAction, Coop = ncclCoopThread(), DescriptorSmem = ncclGin_None{},
                                 cuda::thread_scope = cuda::thread_scope_thread,
                                 cuda::thread_scope = cuda::thread_scope_device,
                                 uint32_t = ncclGinOptFlagsDefault) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE void flush(Coop, cuda::memory_order = cuda::memory_order_acquire,
                                DescriptorSmem = ncclGin_None{}) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop, typename DescriptorSmem = ncclGin_None>
  NCCL_DEVICE_INLINE ncclResult_t flush(Coop, cuda::memory_order, DescriptorSmem, uint64_t) const {
    nccl::detail::ginUnavailable();
    return ncclInvalidUsage;
  }
  NCCL_DEVICE_INLINE uint64_t readCounter(ncclGinCounter_t, int = 56,
                                          cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
    return 0;
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitCounter(Coop, ncclGinCounter_t, uint64_t, int = 56,
                                      cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t waitCounter(Coop, ncclGinCounter_t, uint64_t, int, cuda::memory_order,
                                              uint64_t) const {
    nccl::detail::ginUnavailable();
    return ncclInvalidUsage;
  }
  NCCL_DEVICE_INLINE uint64_t* getSignalShadowPtr(ncclGinSignal_t) const {
    nccl::detail::ginUnavailable();
    return nullptr;
  }
  NCCL_DEVICE_INLINE void increaseSignalShadow(ncclGinSignal_t, uint64_t) const { nccl::detail::ginUnavailable(); }
  NCCL_DEVICE_INLINE uint64_t readSignal(ncclGinSignal_t, int = 64,
                                         cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
    return 0;
  }
  NCCL_DEVICE_INLINE uint64_t readSignal(ncclWindow_t, size_t, int = 64,
                                         cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
    return 0;
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignal(Coop, ncclGinSignal_t, uint64_t, int = 64,
                                     cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t waitSignal(Coop, ncclGinSignal_t, uint64_t, int, cuda::memory_order, uint64_t) const {
    nccl::detail::ginUnavailable();
    return ncclInvalidUsage;
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignal(Coop, ncclWindow_t, size_t, uint64_t, int = 64,
                                     cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE ncclResult_t waitSignal(Coop, ncclWindow_t, size_t, uint64_t, int, cuda::memory_order,
                                             uint64_t) const {
    nccl::detail::ginUnavailable();
    return ncclInvalidUsage;
  }
  template <typename Coop>
  NCCL_DEVICE_INLINE void waitSignalMeetShadow(Coop, ncclGinSignal_t, int = 64,
                                               cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
  }
  template <typename Coop, typename Uint>
  NCCL_DEVICE_INLINE void waitSignalFollowShadow(Coop, ncclGinSignal_t, Uint, Uint*, Uint*, int = 64,
                                                 cuda::memory_order = cuda::memory_order_acquire) const {
    nccl::detail::ginUnavailable();
  }
  NCCL_DEVICE_INLINE void resetCounter(ncclGinCounter_t) const { nccl::detail::ginUnavailable(); }
  NCCL_DEVICE_INLINE void resetSignal(ncclGinSignal_t) const { nccl::detail::ginUnavailable(); }
  NCCL_DEVICE_INLINE void resetSignal(ncclWindow_t, size_t) const { nccl::detail::ginUnavailable(); }
};

/* A context that may use any transport, and one limited to one (an ncclNetDeviceType value). */
using ncclGin = ncclGin_BackendMask<NCCL_GIN_BACKEND_MASK_ALL>;
template <int backend>
using ncclGin_BackendOne = ncclGin_BackendMask<(1u << backend)>;
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_GIN_H_ */
