/*
 * nccl_device/gin_actions.h -- what a GIN operation does besides moving data (nccl_device/gin.h):
 * the remote actions (signals, by index or by window address, strong or weak) and local actions
 * (counters) that ncclGin's calls take, and how they become the proxy transport's descriptors.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_GIN_ACTIONS_H_
#define NCCL_DEVICE_GIN_ACTIONS_H_

#include "core.h"
#include "gin_proxy.h"
#include "gin_proxy_device.h"

#ifdef __CUDACC__
/* Shared-memory room a put may build its network descriptor in. */
struct ncclGinDescriptorSmem {
  alignas(64) char space[128];
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
/* Stops the kernel: a GIN call that cannot be carried out here. */
NCCL_DEVICE_INLINE void ginFail(const char* what) {
  printf("NCCL device API: GIN: %s\n", what);
  __trap();
}
NCCL_DEVICE_INLINE const char* ginBackendName(int backend) {
  switch (backend) {
    case 0:
      return "NCCL_NET_DEVICE_HOST";
    case 1:
      return "NCCL_NET_DEVICE_UNPACK";
    case 2:
      return "NCCL_NET_DEVICE_GIN_PROXY";
    case 3:
      return "NCCL_NET_DEVICE_GIN_GDAKI";
    case 4:
      return "NCCL_NET_DEVICE_GIN_GPI";
    case 5:
      return "NCCL_NET_DEVICE_GIN_EFA_GDA";
    default:
      return "an unknown transport";
  }
}
/* The connection must use the proxy transport, and the context's mask must admit it. */
NCCL_DEVICE_INLINE void ginCheckBackend(int backend, unsigned backendMask) {
  if (backend != ginproxy::kBackend) {
    printf(
        "NCCL device API: GIN: the connection's transport is %s (%d); this header drives "
        "NCCL_NET_DEVICE_GIN_PROXY only\n",
        ginBackendName(backend), backend);
    __trap();
  }
  if ((backendMask & (1u << ginproxy::kBackend)) == 0) {
    printf(
        "NCCL device API: GIN: the connection's transport NCCL_NET_DEVICE_GIN_PROXY is not in the context's "
        "backend mask 0x%x\n",
        backendMask);
    __trap();
  }
}

/* A window as GIN names it: its handle on a connection, and an offset in its GIN registration. */
NCCL_DEVICE_INLINE uint64_t ginWindowHandle(ncclWindow_t w, int backendIndex, int connection) {
  using nccl::utility::loadConst;
  if (backendIndex == 0) return reinterpret_cast<uint64_t>(loadConst(&w->ginWinsDefaultBackend[connection]));
  size_t idx = size_t(backendIndex) * size_t(loadConst(&w->numSegments));
  return reinterpret_cast<uint64_t>(loadConst(&w->ginMultiSegmentWins[idx].ginWins[connection]));
}
NCCL_DEVICE_INLINE uint64_t ginWindowOffset(ncclWindow_t w, size_t offset) {
  return 4096 * uint64_t(nccl::utility::loadConst(&w->ginOffset4K)) + offset;
}

/* Windows of one segment are addressed alike whatever memory they are; several segments are not
 * supported. */
NCCL_DEVICE_INLINE void ginCheckSegments(ncclGin_SegmentDevice, ncclWindow_t, ncclWindow_t) {}
template <typename SegmentType>
NCCL_DEVICE_INLINE void ginCheckSegments(SegmentType, ncclWindow_t a, ncclWindow_t b) {
  using nccl::utility::loadConst;
  if (loadConst(&a->numSegments) != 1 || loadConst(&b->numSegments) != 1) {
    ginFail("puts and gets on windows of several physical segments are not supported by this library");
  }
}

/* Remote actions as the proxy encodes them. The unqualified (legacy) ones are strong when the
 * communicator says so (ginStrongLegacySignals). */
NCCL_DEVICE_INLINE ginproxy::Signal ginIndexed(ncclGinSignal_t id, bool add, uint64_t value, bool strong) {
  ginproxy::Signal s{};
  s.kind = ginproxy::kSignalIndexed;
  s.strong = strong;
  s.add = add;
  s.id = id;
  s.value = value;
  return s;
}
NCCL_DEVICE_INLINE ginproxy::Signal ginVa(ncclDevComm const& comm, int connection, ncclWindow_t w, size_t offset,
                                          bool add, uint64_t value, bool strong) {
  ginproxy::Signal s{};
  s.kind = ginproxy::kSignalVa;
  s.strong = strong;
  s.add = add;
  s.value = value;
  s.vaHandle = ginWindowHandle(w, comm.backendIndex, connection);
  s.vaOffset = ginWindowOffset(w, offset);
  return s;
}
template <typename RemoteAction>
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const&, int, RemoteAction) {
  return ginproxy::Signal{};
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int, ncclGin_SignalInc a) {
  return ginIndexed(a.signal, false, 1, c.ginStrongLegacySignals);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const&, int, ncclGin_StrongSignalInc a) {
  return ginIndexed(a.signal, false, 1, true);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const&, int, ncclGin_WeakSignalInc a) {
  return ginIndexed(a.signal, false, 1, false);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int, ncclGin_SignalAdd a) {
  return ginIndexed(a.signal, true, a.value, c.ginStrongLegacySignals);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const&, int, ncclGin_StrongSignalAdd a) {
  return ginIndexed(a.signal, true, a.value, true);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const&, int, ncclGin_WeakSignalAdd a) {
  return ginIndexed(a.signal, true, a.value, false);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int conn, ncclGin_VASignalInc a) {
  return ginVa(c, conn, a.signalWindow, a.signalOffset, false, 1, c.ginStrongLegacySignals);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int conn, ncclGin_StrongVASignalInc a) {
  return ginVa(c, conn, a.signalWindow, a.signalOffset, false, 1, true);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int conn, ncclGin_WeakVASignalInc a) {
  return ginVa(c, conn, a.signalWindow, a.signalOffset, false, 1, false);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int conn, ncclGin_VASignalAdd a) {
  return ginVa(c, conn, a.signalWindow, a.signalOffset, true, a.value, c.ginStrongLegacySignals);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int conn, ncclGin_StrongVASignalAdd a) {
  return ginVa(c, conn, a.signalWindow, a.signalOffset, true, a.value, true);
}
NCCL_DEVICE_INLINE ginproxy::Signal ginSignalOf(ncclDevComm const& c, int conn, ncclGin_WeakVASignalAdd a) {
  return ginVa(c, conn, a.signalWindow, a.signalOffset, true, a.value, false);
}

/* Local actions: a counter raised once the put's source has been read. */
template <typename LocalAction>
NCCL_DEVICE_INLINE void ginCounterOf(LocalAction, ginproxy::Payload&) {}
NCCL_DEVICE_INLINE void ginCounterOf(ncclGin_CounterInc a, ginproxy::Payload& p) {
  p.hasCounter = true;
  p.counterId = a.counter;
}
NCCL_DEVICE_INLINE void ginCounterOf(ncclGin_WeakCounterInc a, ginproxy::Payload& p) {
  p.hasCounter = true;
  p.counterId = a.counter;
}

/* Spins until `least` <= *word - offset, rolling over `bits` bits. */
template <bool kTimed>
NCCL_DEVICE_INLINE ncclResult_t ginWaitAtLeast(uint64_t* word, uint64_t offset, uint64_t least, int bits,
                                               cuda::memory_order ord, uint32_t* abortFlag, uint64_t timeoutCycles) {
  uint64_t start = kTimed ? uint64_t(clock64()) : 0;
  cuda::atomic_ref<uint64_t, cuda::thread_scope_system> ref(*word);
  cuda::memory_order acquire = nccl::utility::acquireOrderOf(ord);
  least += offset;
  uint32_t spins = 0;
  NVCC_PRAGMA_UNROLL_DISABLED
  while (!nccl::utility::rollingLessEq<uint64_t>(least, ref.load(acquire), bits)) {
    if (kTimed && uint64_t(clock64()) - start >= timeoutCycles) return ncclTimeout;
    if (nccl::utility::testAbort(abortFlag, spins)) return kTimed ? ncclTimeout : ncclSuccess;
  }
  return ncclSuccess;
}
NCCL_DEVICE_INLINE uint64_t ginLowBits(uint64_t v, int bits) { return v & (~uint64_t(0) >> (64 - bits)); }
}  // namespace detail
}  // namespace nccl
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_GIN_ACTIONS_H_ */
