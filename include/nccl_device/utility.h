/*
 * nccl_device/utility.h -- the macros and small helpers that NCCL's device API (nccl_device.h) is
 * written with, under NCCL's names: the inline qualifiers, loop-unrolling pragmas, and in C++ the
 * namespace nccl::utility (integer division by precomputed reciprocals, 4 GiB pointer strides,
 * rolling comparisons, memory-order helpers, atomic loads and stores of a chosen scope, an Optional).
 *
 * Contract: the reciprocal encoding idivRcp32/idivRcp64 is shared with the host. ncclDevComm carries
 * reciprocals that the library computes (nRanks_rcp32, lsaSize_rcp32, ...) and that device code
 * compiled against any NCCL release divides with, so the encoding is NCCL's: rcp(y) = (2^w - 1) / y,
 * plus one when y is a power of two (so rcp(1) wraps to 0, which idivmodFast reads as "divide by 1").
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_UTILITY_H_
#define NCCL_DEVICE_UTILITY_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __CUDACC__
#define NCCL_DEVICE_INLINE __device__ __forceinline__
#define NCCL_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define NCCL_DEVICE_INLINE
#ifdef __cplusplus
#define NCCL_HOST_DEVICE_INLINE inline __attribute__((always_inline))
#else
#define NCCL_HOST_DEVICE_INLINE static inline __attribute__((always_inline))
#endif
#endif

/* `if NCCL_IF_CONSTEXPR (...)`: a compile-time branch where the language has one. */
#ifndef NCCL_IF_CONSTEXPR
#if defined(__cpp_if_constexpr) && __cpp_if_constexpr >= 201606
#define NCCL_IF_CONSTEXPR constexpr
#else
#define NCCL_IF_CONSTEXPR
#endif
#endif

/* Loop unrolling for the loop that follows: a given trip count, nvcc's own choice, or none. */
#ifndef DO_PRAGMA
#define DO_PRAGMA(x) _Pragma(#x)
#endif
#define NVCC_PRAGMA_UNROLL(trip_count) DO_PRAGMA(unroll trip_count)
#define NVCC_PRAGMA_UNROLL_AUTO DO_PRAGMA(unroll)
#define NVCC_PRAGMA_UNROLL_DISABLED NVCC_PRAGMA_UNROLL(1)

#ifndef NCCL_EXTERN_C
#ifdef __cplusplus
#define NCCL_EXTERN_C extern "C"
#else
#define NCCL_EXTERN_C
#endif
#endif

/* C linkage for the device functions only when they are built into an LLVM bitcode library. */
#ifndef NCCL_IR_EXTERN_C
#ifdef __clang_llvm_bitcode_lib__
#define NCCL_IR_EXTERN_C extern "C"
#else
#define NCCL_IR_EXTERN_C
#endif
#endif

#ifdef __CUDACC__
#include <stdio.h>

#include <cuda/atomic>
#endif

#ifdef __cplusplus
namespace nccl {
namespace utility {

/* Wait loops poll the communicator's abort flag once every this many spins: often enough to leave
 * within microseconds of an abort, rarely enough that the poll costs nothing measurable. */
constexpr uint32_t kAbortPollSpins = 10000;

/* Counts one spin of a wait loop; every kAbortPollSpins spins reads *abortFlag (NULL: never set)
 * and answers whether the wait must be abandoned. */
#ifdef __CUDACC__
static NCCL_DEVICE_INLINE bool testAbort(uint32_t* abortFlag, uint32_t& steps) {
  if (++steps < kAbortPollSpins) return false;
  steps = 0;
  if (abortFlag == nullptr) return false;
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_system>{*abortFlag}.load(cuda::memory_order_relaxed) != 0;
}
#else
static inline bool testAbort(uint32_t* abortFlag, uint32_t& steps) {
  if (++steps < kAbortPollSpins) return false;
  steps = 0;
  return abortFlag != nullptr && *static_cast<volatile uint32_t*>(abortFlag) != 0;
}
#endif

/* For unevaluated contexts (decltype) only. */
template <typename T>
T&& declval() noexcept {
  static_assert(sizeof(T) == 0, "declval may only appear in unevaluated contexts");
}

template <typename>
struct always_false {
  static constexpr bool value = false;
};

template <typename T, T value_>
struct ValueAsType {
  static constexpr T value = value_;
};

#ifdef __CUDACC__
/* Zero, read from memory, so the compiler cannot fold expressions that use it. */
template <typename = void>
NCCL_DEVICE_INLINE int opaqueZero() {
  __device__ static int zero = 0;
  return __ldg(&zero);
}
#endif

template <typename X, typename Y, typename Z = decltype(X() + Y())>
NCCL_HOST_DEVICE_INLINE constexpr Z divUp(X x, Y y) {
  return (x + y - 1) / y;
}
template <typename X, typename Y, typename Z = decltype(X() + Y())>
NCCL_HOST_DEVICE_INLINE constexpr Z roundUp(X x, Y y) {
  return divUp<X, Y, Z>(x, y) * y;
}
template <typename X, typename Y, typename Z = decltype(X() + Y())>
NCCL_HOST_DEVICE_INLINE constexpr Z roundDown(X x, Y y) {
  return (x / y) * y;
}

/* alignUp/alignDown: `a` must be a power of two. */
template <typename X, typename Y, typename Z = decltype(X() + Y())>
NCCL_HOST_DEVICE_INLINE constexpr Z alignUp(X x, Y a) {
  return (Z(x) + Z(a) - 1) & ~(Z(a) - 1);
}
template <typename T>
NCCL_HOST_DEVICE_INLINE T* alignUp(T* x, size_t a) {
  static_assert(sizeof(T) == 1, "alignUp of a pointer takes a byte pointer");
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(x) + a - 1) & ~uintptr_t(a - 1));
}
template <typename T>
NCCL_HOST_DEVICE_INLINE void* alignUp(void const* x, size_t a) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(x) + a - 1) & ~uintptr_t(a - 1));
}
template <typename X, typename Y, typename Z = decltype(X() + int())>
NCCL_HOST_DEVICE_INLINE constexpr Z alignDown(X x, Y a) {
  return Z(x) & ~(Z(a) - 1);
}
template <typename T>
NCCL_HOST_DEVICE_INLINE T* alignDown(T* x, size_t a) {
  static_assert(sizeof(T) == 1, "alignDown of a pointer takes a byte pointer");
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(x) & ~uintptr_t(a - 1));
}
template <typename T>
NCCL_HOST_DEVICE_INLINE void* alignDown(void const* x, size_t a) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(x) & ~uintptr_t(a - 1));
}

/* `base` moved by delta4G * 4 GiB. Peers' copies of a window sit stride4G * 4 GiB apart, so this
 * is one add to the high word of the address instead of a 64-bit multiply. The high word wraps
 * modulo 2^32 as a 64-bit add of (delta4G << 32) would. */
template <typename T>
NCCL_HOST_DEVICE_INLINE T add4G(T base, int delta4G) {
  static_assert(sizeof(T) == sizeof(uint64_t), "add4G takes a 64-bit pointer or integer");
  uint64_t bits;
  __builtin_memcpy(&bits, &base, sizeof bits);
  bits += uint64_t(uint32_t(delta4G)) << 32;
  __builtin_memcpy(&base, &bits, sizeof bits);
  return base;
}

/* True for 0 and the powers of two. */
template <typename Int>
NCCL_HOST_DEVICE_INLINE constexpr bool isPow2(Int x) {
  return (x & (x - 1)) == 0;
}

/* a <= b on a counter of nBits bits that wraps around: b is at most half the range ahead of a. */
template <typename Uint>
NCCL_HOST_DEVICE_INLINE bool rollingLessEq(Uint a, Uint b, int nBits = 8 * sizeof(Uint)) {
  static_assert(Uint(-1) > Uint(0), "rollingLessEq compares unsigned counters");
  Uint mask = Uint(-1) >> (8 * sizeof(Uint) - nBits);
  return Uint((b - a) & mask) <= Uint(mask >> 1);
}
template <typename Uint>
NCCL_HOST_DEVICE_INLINE bool rollingLessThan(Uint a, Uint b, int nBits = 8 * sizeof(Uint)) {
  return !rollingLessEq(b, a, nBits);
}

/* The reciprocal of y for idivFast (the encoding described at the top of this file). */
NCCL_HOST_DEVICE_INLINE constexpr uint32_t idivRcp32(uint32_t y) {
  return uint32_t(0xffffffffu / y + (isPow2(y) ? 1u : 0u));
}
NCCL_HOST_DEVICE_INLINE constexpr uint64_t idivRcp64(uint64_t y) {
  return uint64_t(~uint64_t(0) / y + (isPow2(y) ? 1u : 0u));
}

/* The high half of a full-width product. */
NCCL_HOST_DEVICE_INLINE uint32_t mul32hi(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return uint32_t((uint64_t(a) * uint64_t(b)) >> 32);
#endif
}
NCCL_HOST_DEVICE_INLINE uint64_t mul64hi(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return __extension__ uint64_t((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

/* The reciprocal of x*y from those of x and y, with no division: the product of the two
 * reciprocals is at most one below the reciprocal of the product, and the remainder test below
 * adds that one back. A zero reciprocal stands for a divisor of 1. */
NCCL_HOST_DEVICE_INLINE uint32_t imulRcp32(uint32_t x, uint32_t xrcp, uint32_t y, uint32_t yrcp) {
  if (xrcp == 0) return yrcp;
  if (yrcp == 0) return xrcp;
  uint32_t xy = x * y;
  uint32_t rcp = mul32hi(xrcp, yrcp);
  if (xy <= uint32_t(0u - xy * rcp)) rcp += 1;
  return rcp;
}
NCCL_HOST_DEVICE_INLINE uint64_t imulRcp64(uint64_t x, uint64_t xrcp, uint64_t y, uint64_t yrcp) {
  if (xrcp == 0) return yrcp;
  if (yrcp == 0) return xrcp;
  uint64_t xy = x * y;
  uint64_t rcp = mul64hi(xrcp, yrcp);
  if (xy <= uint64_t(0ull - xy * rcp)) rcp += 1;
  return rcp;
}

/* x / y and x % y with yrcp = idivRcp(y): the estimate mul_hi(x, yrcp) is the quotient or one below
 * it, and one compare fixes it. */
NCCL_HOST_DEVICE_INLINE void idivmodFast32(uint32_t* quo, uint32_t* rem, uint32_t x, uint32_t y, uint32_t yrcp) {
  uint32_t q = (yrcp == 0) ? x : mul32hi(x, yrcp);
  uint32_t r = x - q * y;
  if (r >= y) {
    q += 1;
    r -= y;
  }
  *quo = q;
  *rem = r;
}
NCCL_HOST_DEVICE_INLINE void idivmodFast64(uint64_t* quo, uint64_t* rem, uint64_t x, uint64_t y, uint64_t yrcp) {
  uint64_t q = (yrcp == 0) ? x : mul64hi(x, yrcp);
  uint64_t r = x - q * y;
  if (r >= y) {
    q += 1;
    r -= y;
  }
  *quo = q;
  *rem = r;
}
NCCL_HOST_DEVICE_INLINE uint32_t idivFast32(uint32_t x, uint32_t y, uint32_t yrcp) {
  uint32_t q, r;
  idivmodFast32(&q, &r, x, y, yrcp);
  return q;
}
NCCL_HOST_DEVICE_INLINE uint32_t idivFast64(uint64_t x, uint64_t y, uint64_t yrcp) {
  uint64_t q, r;
  idivmodFast64(&q, &r, x, y, yrcp);
  return uint32_t(q);
}
NCCL_HOST_DEVICE_INLINE uint32_t imodFast32(uint32_t x, uint32_t y, uint32_t yrcp) {
  uint32_t q, r;
  idivmodFast32(&q, &r, x, y, yrcp);
  return r;
}
NCCL_HOST_DEVICE_INLINE uint64_t imodFast64(uint64_t x, uint64_t y, uint64_t yrcp) {
  uint64_t q, r;
  idivmodFast64(&q, &r, x, y, yrcp);
  return r;
}

#ifdef __CUDACC__
/* idivRcp64(x) for 1 <= x <= 64 from a table (x = 0 answers idivRcp64(1)). */
NCCL_DEVICE_INLINE uint64_t idivRcp64_upto64(int x) {
  static constexpr uint64_t kTable[65] = {
      idivRcp64(1),  idivRcp64(1),  idivRcp64(2),  idivRcp64(3),  idivRcp64(4),  idivRcp64(5),  idivRcp64(6),
      idivRcp64(7),  idivRcp64(8),  idivRcp64(9),  idivRcp64(10), idivRcp64(11), idivRcp64(12), idivRcp64(13),
      idivRcp64(14), idivRcp64(15), idivRcp64(16), idivRcp64(17), idivRcp64(18), idivRcp64(19), idivRcp64(20),
      idivRcp64(21), idivRcp64(22), idivRcp64(23), idivRcp64(24), idivRcp64(25), idivRcp64(26), idivRcp64(27),
      idivRcp64(28), idivRcp64(29), idivRcp64(30), idivRcp64(31), idivRcp64(32), idivRcp64(33), idivRcp64(34),
      idivRcp64(35), idivRcp64(36), idivRcp64(37), idivRcp64(38), idivRcp64(39), idivRcp64(40), idivRcp64(41),
      idivRcp64(42), idivRcp64(43), idivRcp64(44), idivRcp64(45), idivRcp64(46), idivRcp64(47), idivRcp64(48),
      idivRcp64(49), idivRcp64(50), idivRcp64(51), idivRcp64(52), idivRcp64(53), idivRcp64(54), idivRcp64(55),
      idivRcp64(56), idivRcp64(57), idivRcp64(58), idivRcp64(59), idivRcp64(60), idivRcp64(61), idivRcp64(62),
      idivRcp64(63), idivRcp64(64)};
  return kTable[x];
}
/* A 32-bit reciprocal for 1 <= x <= 64, from the same table. */
NCCL_DEVICE_INLINE uint32_t idivRcp32_upto64(int x) { return uint32_t(idivRcp64_upto64(x) >> 32); }

/* The part of a memory order that applies to a load (acquire side) and to a store (release side):
 * an acq_rel barrier acquires on its wait and releases on its arrive. */
NCCL_DEVICE_INLINE cuda::memory_order acquireOrderOf(cuda::memory_order ord) {
  if (ord == cuda::memory_order_release) return cuda::memory_order_relaxed;
  if (ord == cuda::memory_order_acq_rel) return cuda::memory_order_acquire;
  return ord;
}
NCCL_DEVICE_INLINE cuda::memory_order releaseOrderOf(cuda::memory_order ord) {
  if (ord == cuda::memory_order_acquire) return cuda::memory_order_relaxed;
  if (ord == cuda::memory_order_acq_rel) return cuda::memory_order_release;
  return ord;
}

/* An atomic load or store whose scope is a run-time value (libcu++ takes it as a type). */
template <typename T>
NCCL_DEVICE_INLINE T atomicLoad(T* ptr, cuda::memory_order ord, cuda::thread_scope scope) {
  if (scope == cuda::thread_scope_system) return cuda::atomic_ref<T, cuda::thread_scope_system>{*ptr}.load(ord);
  if (scope == cuda::thread_scope_device) return cuda::atomic_ref<T, cuda::thread_scope_device>{*ptr}.load(ord);
  if (scope == cuda::thread_scope_block) return cuda::atomic_ref<T, cuda::thread_scope_block>{*ptr}.load(ord);
  return cuda::atomic_ref<T, cuda::thread_scope_thread>{*ptr}.load(ord);
}
template <typename T>
NCCL_DEVICE_INLINE void atomicStore(T* ptr, T val, cuda::memory_order ord, cuda::thread_scope scope) {
  if (scope == cuda::thread_scope_system) {
    cuda::atomic_ref<T, cuda::thread_scope_system>{*ptr}.store(val, ord);
  } else if (scope == cuda::thread_scope_device) {
    cuda::atomic_ref<T, cuda::thread_scope_device>{*ptr}.store(val, ord);
  } else if (scope == cuda::thread_scope_block) {
    cuda::atomic_ref<T, cuda::thread_scope_block>{*ptr}.store(val, ord);
  } else {
    cuda::atomic_ref<T, cuda::thread_scope_thread>{*ptr}.store(val, ord);
  }
}

/* This thread's lane in its warp, and the mask of the lanes below it. */
NCCL_DEVICE_INLINE int lane() {
  int id;
  asm("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}
NCCL_DEVICE_INLINE unsigned int lanemask_lt() {
  unsigned int mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

/* Loads of memory that no one writes while the kernel runs (a window's descriptor, the device
 * communicator). loadConstLdg goes through the read-only data path in words of T's alignment;
 * loadConst is a plain load, which the compiler may cache and hoist just the same. */
#define NCCL_DEVICE_LOADCONST_USE_LDG 0
template <typename T>
NCCL_DEVICE_INLINE T loadConstLdg(T const* p) {
  union Words {
    T value;
    uint8_t w1[sizeof(T)];
    uint16_t w2[sizeof(T) / 2 ? sizeof(T) / 2 : 1];
    uint32_t w4[sizeof(T) / 4 ? sizeof(T) / 4 : 1];
    unsigned long long w8[sizeof(T) / 8 ? sizeof(T) / 8 : 1];
    Words() {}
  } out;
  if NCCL_IF_CONSTEXPR (alignof(T) >= 8) {
    for (int i = 0; i < int(sizeof(T) / 8); i++) out.w8[i] = __ldg(reinterpret_cast<unsigned long long const*>(p) + i);
  } else if NCCL_IF_CONSTEXPR (alignof(T) == 4) {
    for (int i = 0; i < int(sizeof(T) / 4); i++) out.w4[i] = __ldg(reinterpret_cast<uint32_t const*>(p) + i);
  } else if NCCL_IF_CONSTEXPR (alignof(T) == 2) {
    for (int i = 0; i < int(sizeof(T) / 2); i++) out.w2[i] = __ldg(reinterpret_cast<uint16_t const*>(p) + i);
  } else {
    for (int i = 0; i < int(sizeof(T)); i++) out.w1[i] = __ldg(reinterpret_cast<uint8_t const*>(p) + i);
  }
  return out.value;
}
template <typename T>
NCCL_DEVICE_INLINE T loadConst(T const* p) {
#if NCCL_DEVICE_LOADCONST_USE_LDG
  return loadConstLdg(p);
#else
  return *p;
#endif
}
#endif /* __CUDACC__ */

/* Optional<T>: a T constructed in place from present(args...), or left unconstructed (Absent).
 * The device API builds sessions with it where a barrier may or may not have a part. */
template <int... vals>
struct IntSeq {};
template <int n, int m, int... i>
struct IntSeqUpTo : IntSeqUpTo<n, m + 1, i..., m> {};
template <int n, int... i>
struct IntSeqUpTo<n, n, i...> {
  using Type = IntSeq<i...>;
};

template <typename... Arg>
struct Present;
template <>
struct Present<> {};
template <typename H, typename... T>
struct Present<H, T...> {
  H h;
  Present<T...> t;
  NCCL_HOST_DEVICE_INLINE Present(H head, Present<T...> tail) : h(static_cast<H>(head)), t(tail) {}
  NCCL_HOST_DEVICE_INLINE Present(Present const& that) : h(static_cast<H>(that.h)), t(that.t) {}
  NCCL_HOST_DEVICE_INLINE H get(IntSeq<0>) { return static_cast<H>(h); }
  template <int i>
  NCCL_HOST_DEVICE_INLINE decltype(auto) get(IntSeq<i>) {
    return t.get(IntSeq<i - 1>{});
  }
};
NCCL_HOST_DEVICE_INLINE Present<> present() { return Present<>{}; }
template <typename H, typename... T>
NCCL_HOST_DEVICE_INLINE Present<H&&, T&&...> present(H&& h, T&&... t) {
  return Present<H&&, T&&...>{static_cast<H&&>(h), present(static_cast<T&&>(t)...)};
}
struct Absent {};

template <typename T>
struct Optional {
  bool present;
  union {
    T thing;
  };
  NCCL_HOST_DEVICE_INLINE constexpr Optional() : present(false) {}
  NCCL_HOST_DEVICE_INLINE constexpr Optional(Absent) : present(false) {}
  template <typename... Arg, int... i>
  NCCL_HOST_DEVICE_INLINE Optional(Present<Arg...> args, IntSeq<i...>)
      : present(true), thing{args.get(IntSeq<i>())...} {}
  template <typename... Arg>
  NCCL_HOST_DEVICE_INLINE Optional(Present<Arg...> args)
      : Optional(args, typename IntSeqUpTo<int(sizeof...(Arg)), 0>::Type()) {}
  NCCL_HOST_DEVICE_INLINE ~Optional() {
    if (present) thing.~T();
  }
};

}  // namespace utility

#ifdef __CUDACC__
namespace detail {
/* Stops the kernel where device code asks for something this library cannot provide. The host side
 * never hands out what such code needs (multicast, GIN), so reaching this is a program error; a
 * message and a trap say so, where carrying on would store through a null address. */
NCCL_DEVICE_INLINE void unavailable(const char* what) {
  printf("NCCL device API: %s is not available with this library\n", what);
  __trap();
}
}  // namespace detail
#endif
}  // namespace nccl
#endif /* __cplusplus */

#endif /* NCCL_DEVICE_UTILITY_H_ */
