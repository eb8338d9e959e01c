// Inline PTX for the data path: the only place where device code names memory orderings.
//
// Contract and memory-ordering vocabulary used by the protocols (prims/):
//   - ldVolatile/stVolatile 16-byte accesses: one transaction each, never cached in L1, never merged
//     or split by the compiler. LL and LL128 rely on a 16-byte (LL: each 8-byte half) store arriving
//     whole with its flag, and on a 16-byte load seeing one store or the other, not a mix.
//   - ldAcquireSys: acquire at system scope (peer GPUs and host memory): it sees every write that a
//     release (fence or store) published before the value it reads, including other threads'
//     writes ordered before that release by a barrier (PTX memory model cumulativity).
//   - fenceAcqRelSys: the fence that Simple issues once per published tail.
//   - namedBarrierSync/Arrive: bar.sync / bar.arrive on a named barrier for a subset of warps, so
//     that the Simple poster warp never takes part in the workers' barriers.
#pragma once

#include <cstdint>

namespace braid {

__device__ __forceinline__ uint4 ldVolatile16(const void* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

__device__ __forceinline__ void stVolatile16(void* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Two 64-bit words as one 16-byte store (LL128: lane j of a line writes words 2j and 2j+1).
__device__ __forceinline__ void stVolatile16(void* p, uint64_t lo, uint64_t hi) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
}

__device__ __forceinline__ void ldVolatile16(const void* p, uint64_t& lo, uint64_t& hi) {
  asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(p) : "memory");
}

// Plain (weak) 16-byte global accesses for user buffers and the Simple FIFO payload. Weak is enough:
// the FIFO payload is ordered by the tail/head handshake, and user buffers are private to the kernel.
__device__ __forceinline__ uint4 ldGlobal16(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ void stGlobal16(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

__device__ __forceinline__ uint64_t ldAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Between the CTAs of one kernel on this GPU (the in-place guards of point-to-point kernels).
__device__ __forceinline__ uint64_t ldAcquireGpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void stReleaseGpu(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t ldVolatile64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void stRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void fenceAcqRelSys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

// Shared-memory release/acquire between the Simple workers and their poster warp (same CTA).
__device__ __forceinline__ void stReleaseCta(uint64_t* p, uint64_t v) {
  asm volatile("st.release.cta.shared.u64 [%0], %1;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))), "l"(v)
               : "memory");
}

__device__ __forceinline__ uint64_t ldAcquireCta(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.cta.shared.u64 %0, [%1];"
               : "=l"(v)
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p)))
               : "memory");
  return v;
}

// Named barriers: id 0 is __syncthreads; the protocols use ids 1..3.
__device__ __forceinline__ void namedBarrierSync(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

__device__ __forceinline__ int readAbort(const volatile int* flag) { return *flag; }

}  // namespace braid
