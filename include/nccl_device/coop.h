/*
 * nccl_device/coop.h -- cooperative groups of NCCL's device API: the sets of threads that enter a
 * device-API call together (a barrier, an LL all-to-all epoch, a GIN flush). Each offers the part
 * of CUDA's cooperative-groups interface the device API needs:
 *   int thread_rank();  this thread's index in the group, 0 <= thread_rank() < size()
 *   int size();         int num_threads();  (the same)
 *   void sync();        every thread of the group arrives before any leaves, with memory ordering
 *                       among them as __syncthreads/__syncwarp give
 *
 *   ncclCoopTile<N>   N lanes (a power of two, at most 32), aligned to N within one warp
 *   ncclCoopThread    one thread (ncclCoopTile<1>)       ncclCoopWarp  a whole warp (ncclCoopTile<32>)
 *   ncclCoopLanes     an arbitrary set of lanes of one warp, as a mask
 *   ncclCoopWarpSpan  warps warp0 .. warp0+nWarps-1 of the block, synchronized on hardware barrier
 *                     1 + id (id 0..14): two spans in flight at once must have different ids
 *   ncclCoopCta       the whole thread block (one-dimensional blocks)
 *   ncclCoopAny       any of the above behind one type, dispatched at run time
 *
 * All of it is device code; nothing here exists for a host compiler.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_COOP_H_
#define NCCL_DEVICE_COOP_H_

#include "utility.h"

#ifdef __CUDACC__
#include <string.h>

#include <new>

/* Any cooperative group, erased to a 16-byte copy of it and a table of its three operations. */
struct ncclCoopAny {
  struct Storage {
    alignas(alignof(void*)) char space[16];
  };
  struct VTable {
    int (*thread_rank)(void const*);
    int (*size)(void const*);
    void (*sync)(void*);
  };

  template <typename Impl>
  __device__ static int thread_rank(void const* o) {
    return static_cast<Impl const*>(o)->thread_rank();
  }
  template <typename Impl>
  __device__ static int size(void const* o) {
    return static_cast<Impl const*>(o)->size();
  }
  template <typename Impl>
  __device__ static void sync(void* o) {
    static_cast<Impl*>(o)->sync();
  }
  template <typename Impl>
  __device__ static VTable const* get_vtable() {
    static_assert(sizeof(Impl) <= sizeof(Storage), "this cooperative group does not fit ncclCoopAny");
    static_assert(alignof(Impl) <= alignof(Storage), "this cooperative group is over-aligned for ncclCoopAny");
    static constexpr VTable kTable = {&thread_rank<Impl>, &size<Impl>, &sync<Impl>};
    return &kTable;
  }

  Storage storage;
  VTable const* vtable;

  ncclCoopAny() = default;
  ncclCoopAny(ncclCoopAny const&) = default;
  ncclCoopAny(ncclCoopAny&&) = default;
  template <typename Impl>
  __device__ ncclCoopAny(Impl impl) {
    ::new (static_cast<void*>(&storage)) Impl(impl);
    vtable = get_vtable<Impl>();
  }

  __device__ int thread_rank() const { return vtable->thread_rank(&storage); }
  __device__ int size() const { return vtable->size(&storage); }
  __device__ int num_threads() const { return vtable->size(&storage); }
  __device__ void sync() { vtable->sync(&storage); }
};

template <int nThreadsPow2>
struct ncclCoopTile {
  static_assert(nThreadsPow2 >= 1 && nThreadsPow2 <= 32 && nccl::utility::isPow2(nThreadsPow2),
                "a tile is a power of two of lanes, at most a warp");

  NCCL_DEVICE_INLINE int thread_rank() const { return nccl::utility::lane() & (nThreadsPow2 - 1); }
  NCCL_DEVICE_INLINE constexpr int size() const { return nThreadsPow2; }
  NCCL_DEVICE_INLINE constexpr int num_threads() const { return nThreadsPow2; }
  /* The lanes of this thread's tile. */
  NCCL_DEVICE_INLINE uint32_t laneMask() const {
    uint32_t ones = nThreadsPow2 == 32 ? 0xffffffffu : ((1u << nThreadsPow2) - 1u);
    return ones << (nccl::utility::lane() & ~(nThreadsPow2 - 1));
  }
  NCCL_DEVICE_INLINE void sync() {
    if (nThreadsPow2 > 1) __syncwarp(laneMask());
  }
};
typedef ncclCoopTile<1> ncclCoopThread;
typedef ncclCoopTile<32> ncclCoopWarp;

struct ncclCoopLanes {
  uint32_t lmask;

  NCCL_DEVICE_INLINE constexpr ncclCoopLanes(uint32_t lmask_ = ~0u) : lmask(lmask_) {}
  NCCL_DEVICE_INLINE int thread_rank() const { return __popc(lmask & nccl::utility::lanemask_lt()); }
  NCCL_DEVICE_INLINE int size() const { return __popc(lmask); }
  NCCL_DEVICE_INLINE int num_threads() const { return __popc(lmask); }
  NCCL_DEVICE_INLINE void sync() { __syncwarp(lmask); }
};

struct ncclCoopWarpSpan {
  uint32_t warp0 : 8, nWarps : 8, id : 8;

  NCCL_DEVICE_INLINE constexpr ncclCoopWarpSpan(int warp0_, int nWarps_, int id_)
      : warp0(uint32_t(warp0_)), nWarps(uint32_t(nWarps_)), id(uint32_t(id_)) {}
  NCCL_DEVICE_INLINE int thread_rank() const { return int(threadIdx.x) - 32 * int(warp0); }
  NCCL_DEVICE_INLINE int size() const { return 32 * int(nWarps); }
  NCCL_DEVICE_INLINE int num_threads() const { return 32 * int(nWarps); }
  /* Hardware barrier 0 is __syncthreads'; a span uses 1 + id, counting its own threads only. */
  NCCL_DEVICE_INLINE void sync() {
    asm volatile("barrier.sync.aligned %0, %1;" ::"r"(1 + id), "r"(32 * nWarps) : "memory");
  }
};

struct ncclCoopCta {
  NCCL_DEVICE_INLINE int thread_rank() const { return int(threadIdx.x); }
  NCCL_DEVICE_INLINE int size() const { return int(blockDim.x); }
  NCCL_DEVICE_INLINE int num_threads() const { return int(blockDim.x); }
  NCCL_DEVICE_INLINE void sync() { __syncthreads(); }
};

/* The lanes of the caller's warp that belong to its group (all of them for groups wider than a
 * warp, whose warps are whole). */
template <int nThreadsPow2>
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopTile<nThreadsPow2> coop) {
  return coop.laneMask();
}
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopLanes coop) { return coop.lmask; }
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopWarpSpan) { return ~0u; }
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopCta) { return ~0u; }

/* Whether the group is known at compile time to be one thread. */
template <int nThreads>
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopTile<nThreads>) {
  return nThreads == 1;
}
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopLanes) { return false; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopWarpSpan) { return false; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopCta) { return false; }

/* Whether the group never spans more than one warp. */
template <int nThreads>
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopTile<nThreads>) {
  return true;
}
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopLanes) { return true; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopWarpSpan) { return false; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopCta) { return false; }

/* The lanes of the caller's warp that are executing this call together. */
NCCL_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced() { return ncclCoopLanes{__activemask()}; }

/* The lanes of the caller's warp that can act together given that the whole group `coop` made
 * this call: a group of whole warps gives the whole warp; a sub-warp group gives itself. */
template <typename Coop>
NCCL_DEVICE_INLINE ncclCoopTile<32> ncclCoopCoalesced(Coop) {
  return ncclCoopTile<32>();
}
NCCL_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced(ncclCoopLanes coop) { return coop; }
template <int nThreads>
NCCL_DEVICE_INLINE ncclCoopTile<nThreads> ncclCoopCoalesced(ncclCoopTile<nThreads> coop) {
  return coop;
}

/* ncclCoopBcast(coop, value, root): every thread of the group gets the `value` of the thread whose
 * thread_rank() is root. Within a warp it moves through shuffles; across warps through shared
 * memory, with a sync first (unless entrySync is false: the caller knows that no thread still
 * reads the previous broadcast) and one after. */
template <int nThreads, typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopTile<nThreads> coop, T value, int root, bool entrySync = true) {
  (void)entrySync;
  constexpr int kWords = int((sizeof(T) + 3) / 4);
  uint32_t word[kWords] = {};
  memcpy(word, &value, sizeof(T));
  uint32_t mask = coop.laneMask();
  NVCC_PRAGMA_UNROLL_AUTO
  for (int i = 0; i < kWords; i++) word[i] = __shfl_sync(mask, word[i], root, nThreads);
  memcpy(&value, word, sizeof(T));
  return value;
}
template <typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopLanes coop, T value, int root, bool entrySync = true) {
  (void)entrySync;
  constexpr int kWords = int((sizeof(T) + 3) / 4);
  uint32_t word[kWords] = {};
  memcpy(word, &value, sizeof(T));
  /* The lane holding the root-th (from 0) set bit of the mask. */
  int srcLane = int(__fns(coop.lmask, 0, root + 1));
  NVCC_PRAGMA_UNROLL_AUTO
  for (int i = 0; i < kWords; i++) word[i] = __shfl_sync(coop.lmask, word[i], srcLane);
  memcpy(&value, word, sizeof(T));
  return value;
}

/* Shared-memory mailboxes for broadcasts across warps: one per warp-span id, one per block. */
NCCL_DEVICE_INLINE ulong2* ncclCoopBcast_WarpSpan_stash() {
  __shared__ ulong2 stash[16];
  return stash;
}
NCCL_DEVICE_INLINE ulong2* ncclCoopBcast_Cta_stash() {
  __shared__ ulong2 stash;
  return &stash;
}

template <typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopWarpSpan coop, T value, int root, bool entrySync = true) {
  static_assert(sizeof(T) <= sizeof(ulong2), "ncclCoopBcast across warps carries at most 16 bytes");
  T* box = reinterpret_cast<T*>(&ncclCoopBcast_WarpSpan_stash()[coop.id]);
  if (entrySync) coop.sync();
  if (coop.thread_rank() == root) *box = value;
  coop.sync();
  return *box;
}
template <typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopCta coop, T value, int root, bool entrySync = true) {
  static_assert(sizeof(T) <= sizeof(ulong2), "ncclCoopBcast across warps carries at most 16 bytes");
  T* box = reinterpret_cast<T*>(ncclCoopBcast_Cta_stash());
  if (entrySync) coop.sync();
  if (coop.thread_rank() == root) *box = value;
  coop.sync();
  return *box;
}
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_COOP_H_ */
