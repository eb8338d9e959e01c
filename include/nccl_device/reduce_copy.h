/*
 * nccl_device/reduce_copy.h -- reduce and copy building blocks over LSA peers' memory: ReduceSum
 * (N sources summed into one destination), Copy (one source stored to N destinations) and
 * ReduceSumCopy (N sources summed, the sum stored to M destinations), plus ncclLsaReduceLsaCopy
 * with a reduction operator of the program's own (an object with T operator()(T const&, T const&)).
 *
 * Sources and destinations are given as a symmetric pointer or window + offset and a team (every
 * member's copy), a device communicator (its LSA team), a lambda (int i) -> T* over i < n, or a
 * base pointer and a stride in elements (the Local forms). The threads of `coop` split the
 * elements among themselves; nothing is synchronized, so a barrier must order these accesses with
 * the peers' (before: their sources are written; after: their destinations may be read).
 *
 * Every element is reduced in source order (source 0 first), so ranks that reduce the same
 * elements get the same bits. Where all pointers are equally aligned modulo 16 bytes, the bulk moves
 * in 16-byte packs, UNROLL / (16 / sizeof(T)) packs per thread in flight.
 *
 * The multimem forms (sources or destinations through a multicast address) are declared; this
 * library creates no multicast objects, and they stop the kernel with a message.
 *
 * Licensed under the Apache License, Version 2.0 (see LICENSE).
 */
#ifndef NCCL_DEVICE_REDUCE_COPY_H_
#define NCCL_DEVICE_REDUCE_COPY_H_

#include <string.h>

#include "core.h"
#include "ptr.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#if defined(__CUDA_FP8_TYPES_EXIST__)
#include <cuda_fp8.h>
#endif

namespace nccl {
namespace utility {

/* The sum reduction operator. */
template <typename T>
struct OpSum {
  using EltType = T;
  NCCL_DEVICE_INLINE T operator()(const T& a, const T& b) const { return a + b; }
};
#if defined(__CUDA_FP8_TYPES_EXIST__)
/* 8-bit floats have no arithmetic of their own: through half precision. */
template <>
struct OpSum<__nv_fp8_e4m3> {
  using EltType = __nv_fp8_e4m3;
  NCCL_DEVICE_INLINE __nv_fp8_e4m3 operator()(const __nv_fp8_e4m3& a, const __nv_fp8_e4m3& b) const {
    return __nv_fp8_e4m3(__hadd(__half(a), __half(b)));
  }
};
template <>
struct OpSum<__nv_fp8_e5m2> {
  using EltType = __nv_fp8_e5m2;
  NCCL_DEVICE_INLINE __nv_fp8_e5m2 operator()(const __nv_fp8_e5m2& a, const __nv_fp8_e5m2& b) const {
    return __nv_fp8_e5m2(__hadd(__half(a), __half(b)));
  }
};
#endif

/* A reduction operator Red<T> rebound to another element type (an accumulator's). */
template <typename RedOp, typename AccEltType>
struct AccRedOp {
  using Type = RedOp;
};
template <template <typename> class Red, typename T, typename AccEltType>
struct AccRedOp<Red<T>, AccEltType> {
  using Type = Red<AccEltType>;
};

/* The lane distance between a thread's consecutive elements for a cooperative group, where it is
 * known at compile time (0: known at run time only). */
template <typename Coop>
struct CoopStride {
  static constexpr int value = 0;
};
template <>
struct CoopStride<ncclCoopWarp> {
  static constexpr int value = 32;
};
template <>
struct CoopStride<ncclCoopCta> {
  static constexpr int value = 32;
};
template <>
struct CoopStride<ncclCoopThread> {
  static constexpr int value = 1;
};

}  // namespace utility

namespace detail {

NCCL_DEVICE_INLINE void multimemUnavailable() { unavailable("multimem reduce/copy (no multicast)"); }

/* Elements [begin, end) one at a time, thread t of the group taking begin + t, + size, ... */
template <typename T, typename RedOp, typename Coop, typename SrcFn, typename DstFn>
NCCL_DEVICE_INLINE void reduceCopyElements(Coop coop, SrcFn src, int nSrc, DstFn dst, int nDst, RedOp const& red,
                                           size_t begin, size_t end) {
  for (size_t i = begin + size_t(coop.thread_rank()); i < end; i += size_t(coop.size())) {
    T acc = src(0)[i];
    for (int s = 1; s < nSrc; s++) acc = red(acc, src(s)[i]);
    for (int d = 0; d < nDst; d++) dst(d)[i] = acc;
  }
}

/* 16-byte packs of kPack elements starting at element `first`, kUnroll packs per thread in flight. */
template <typename T, typename RedOp, int kUnroll, typename Coop, typename SrcFn, typename DstFn>
NCCL_DEVICE_INLINE void reduceCopyPacks(Coop coop, SrcFn src, int nSrc, DstFn dst, int nDst, RedOp const& red,
                                        size_t first, size_t nPacks) {
  constexpr int kPack = int(16 / sizeof(T));
  const size_t stride = size_t(coop.size());
  for (size_t p0 = size_t(coop.thread_rank()); p0 < nPacks; p0 += stride * kUnroll) {
    T acc[kUnroll][kPack];
    for (int s = 0; s < nSrc; s++) {
      uint4 const* in = reinterpret_cast<uint4 const*>(src(s) + first);
      NVCC_PRAGMA_UNROLL_AUTO
      for (int u = 0; u < kUnroll; u++) {
        size_t p = p0 + u * stride;
        if (p >= nPacks) break;
        uint4 bits = in[p];
        T v[kPack];
        memcpy(static_cast<void*>(v), &bits, sizeof(bits));
        NVCC_PRAGMA_UNROLL_AUTO
        for (int k = 0; k < kPack; k++) acc[u][k] = (s == 0) ? v[k] : red(acc[u][k], v[k]);
      }
    }
    for (int d = 0; d < nDst; d++) {
      uint4* out = reinterpret_cast<uint4*>(dst(d) + first);
      NVCC_PRAGMA_UNROLL_AUTO
      for (int u = 0; u < kUnroll; u++) {
        size_t p = p0 + u * stride;
        if (p >= nPacks) break;
        uint4 bits;
        memcpy(&bits, static_cast<void const*>(acc[u]), sizeof(bits));
        out[p] = bits;
      }
    }
  }
}

/* dst(d)[i] = red(...red(src(0)[i], src(1)[i])..., src(nSrc-1)[i]) for every d < nDst and i < count. */
template <typename T, typename RedOp, int UNROLL, typename Coop, typename SrcFn, typename DstFn, typename IntCount>
NCCL_DEVICE_INLINE void reduceCopy(Coop coop, SrcFn src, int nSrc, DstFn dst, int nDst, RedOp const& red,
                                   IntCount count) {
  if (!(count > 0) || nSrc <= 0 || nDst <= 0) return;
  const size_t n = size_t(count);
  constexpr bool kPackable = sizeof(T) <= 16 && 16 % sizeof(T) == 0 && sizeof(T) < 16;
  size_t head = n;
  if (kPackable) {
    uintptr_t skew = reinterpret_cast<uintptr_t>(src(0)) & 15;
    bool same = skew % sizeof(T) == 0;
    for (int s = 1; s < nSrc && same; s++) same = (reinterpret_cast<uintptr_t>(src(s)) & 15) == skew;
    for (int d = 0; d < nDst && same; d++) same = (reinterpret_cast<uintptr_t>(dst(d)) & 15) == skew;
    if (same) head = ((16 - skew) & 15) / sizeof(T) < n ? ((16 - skew) & 15) / sizeof(T) : n;
  }
  reduceCopyElements<T>(coop, src, nSrc, dst, nDst, red, 0, head);
  if (kPackable && head < n) {
    constexpr int kPack = int(16 / sizeof(T));
    constexpr int kUnroll = (UNROLL / kPack) > 0 ? (UNROLL / kPack) : 1;
    size_t nPacks = (n - head) / kPack;
    reduceCopyPacks<T, RedOp, kUnroll>(coop, src, nSrc, dst, nDst, red, head, nPacks);
    reduceCopyElements<T>(coop, src, nSrc, dst, nDst, red, head + nPacks * kPack, n);
  }
}

}  // namespace detail
}  // namespace nccl

/* ---- 1.x, 2.x: lambdas over LSA sources and destinations ---- */

template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename RedOp, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceLsaCopy(Coop coop, SrcLambda srcLambda, int nSrc, DstLambda dstLambda, int nDst,
                                             RedOp const& redOp, IntCount count) {
  nccl::detail::reduceCopy<T, RedOp, UNROLL>(coop, srcLambda, nSrc, dstLambda, nDst, redOp, count);
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename RedOp, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceMultimemCopy(Coop, SrcLambda, int, DstLambda, int, RedOp const&, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumLsaCopy(Coop coop, SrcLambda srcLambda, int nSrc, DstLambda dstLambda, int nDst,
                                                IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(coop, srcLambda, nSrc, dstLambda, nDst,
                                                               nccl::utility::OpSum<T>{}, count);
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumMultimemCopy(Coop, SrcLambda, int, DstLambda, int, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumLsaCopy(Coop, SrcLambda, int, DstLambda, int, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumMultimemCopy(Coop, SrcLambda, int, DstLambda, int, IntCount) {
  nccl::detail::multimemUnavailable();
}

/* ---- 3.x ReduceSum: N sources -> one local destination ---- */

template <typename T, typename Coop, typename SrcLambda, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSum(Coop coop, SrcLambda srcLambda, int nSrc, T* dst, IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, srcLambda, nSrc, [=](int) { return dst; }, 1, nccl::utility::OpSum<T>{}, count);
}
/* Every member of `team`'s copy of src, summed into dst. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSum(Coop coop, ncclSymPtr<T> src, T* dst, IntCount count, ncclTeam team) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int i) { return src.peerPtr(team, i); }, team.nRanks, [=](int) { return dst; }, 1,
      nccl::utility::OpSum<T>{}, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSum(Coop coop, ncclSymPtr<T> src, T* dst, IntCount count, ncclDevComm_t devComm) {
  ncclLsaReduceSum<T, Coop, IntCount, UNROLL>(coop, src, dst, count, ncclTeamLsa(devComm));
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSum(Coop coop, ncclWindow_t window, size_t offset, T* dst, IntCount count,
                                         ncclTeam team) {
  ncclLsaReduceSum<T, Coop, IntCount, UNROLL>(coop, ncclSymPtr<T>(window, offset), dst, count, team);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSum(Coop coop, ncclWindow_t window, size_t offset, T* dst, IntCount count,
                                         ncclDevComm_t devComm) {
  ncclLsaReduceSum<T, Coop, IntCount, UNROLL>(coop, ncclSymPtr<T>(window, offset), dst, count, ncclTeamLsa(devComm));
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSum(Coop, ncclSymPtr<T>, T*, IntCount, ncclMultimemHandle) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSum(Coop, T*, T*, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount, ncclMultimemHandle) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename SrcLambda, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLocalReduceSum(Coop coop, SrcLambda srcLambda, int nSrc, T* dst, IntCount count) {
  ncclLsaReduceSum<T, Coop, SrcLambda, IntCount, UNROLL>(coop, srcLambda, nSrc, dst, count);
}
/* Sources src, src + displ, ... (displ in elements). */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLocalReduceSum(Coop coop, int nSrc, T* src, size_t displ, T* dst, IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int i) { return src + size_t(i) * displ; }, nSrc, [=](int) { return dst; }, 1,
      nccl::utility::OpSum<T>{}, count);
}

/* ---- 4.x Copy: one local source -> N destinations ---- */

template <typename T, typename Coop, typename DstLambda, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaCopy(Coop coop, T* src, DstLambda dstLambda, int nDst, IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int) { return src; }, 1, dstLambda, nDst, nccl::utility::OpSum<T>{}, count);
}
/* src stored into every member of `team`'s copy of dst. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaCopy(Coop coop, T* src, ncclSymPtr<T> dst, IntCount count, ncclTeam team) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int) { return src; }, 1, [=](int i) { return dst.peerPtr(team, i); }, team.nRanks,
      nccl::utility::OpSum<T>{}, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaCopy(Coop coop, T* src, ncclSymPtr<T> dst, IntCount count, ncclDevComm_t devComm) {
  ncclLsaCopy<T, Coop, IntCount, UNROLL>(coop, src, dst, count, ncclTeamLsa(devComm));
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaCopy(Coop coop, T* src, ncclWindow_t window, size_t offset, IntCount count,
                                    ncclTeam team) {
  ncclLsaCopy<T, Coop, IntCount, UNROLL>(coop, src, ncclSymPtr<T>(window, offset), count, team);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaCopy(Coop coop, T* src, ncclWindow_t window, size_t offset, IntCount count,
                                    ncclDevComm_t devComm) {
  ncclLsaCopy<T, Coop, IntCount, UNROLL>(coop, src, ncclSymPtr<T>(window, offset), count, ncclTeamLsa(devComm));
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemCopy(Coop, T*, ncclSymPtr<T>, IntCount, ncclMultimemHandle) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemCopy(Coop, T*, T*, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclMultimemHandle) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename DstLambda, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLocalCopy(Coop coop, T* src, DstLambda dstLambda, int nDst, IntCount count) {
  ncclLsaCopy<T, Coop, DstLambda, IntCount, UNROLL>(coop, src, dstLambda, nDst, count);
}
/* Destinations dst, dst + displ, ... (displ in elements). */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLocalCopy(Coop coop, T* src, int nDst, T* dst, size_t displ, IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int) { return src; }, 1, [=](int i) { return dst + size_t(i) * displ; }, nDst,
      nccl::utility::OpSum<T>{}, count);
}

/* ---- 5.x ReduceSumCopy: N sources summed -> M destinations ---- */

/* Every member of srcTeam's copy of src summed, into every member of dstTeam's copy of dst. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumCopy(Coop coop, ncclSymPtr<T> src, ncclTeam srcTeam, ncclSymPtr<T> dst,
                                             ncclTeam dstTeam, IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int i) { return src.peerPtr(srcTeam, i); }, srcTeam.nRanks,
      [=](int i) { return dst.peerPtr(dstTeam, i); }, dstTeam.nRanks, nccl::utility::OpSum<T>{}, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumCopy(Coop coop, ncclSymPtr<T> src, ncclSymPtr<T> dst, IntCount count,
                                             ncclTeam team) {
  ncclLsaReduceSumCopy<T, Coop, IntCount, UNROLL>(coop, src, team, dst, team, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumCopy(Coop coop, ncclSymPtr<T> src, ncclSymPtr<T> dst, IntCount count,
                                             ncclDevComm_t devComm) {
  ncclTeam lsa = ncclTeamLsa(devComm);
  ncclLsaReduceSumCopy<T, Coop, IntCount, UNROLL>(coop, src, lsa, dst, lsa, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumCopy(Coop coop, ncclWindow_t srcWindow, size_t srcOffset,
                                             ncclWindow_t dstWindow, size_t dstOffset, IntCount count, ncclTeam team) {
  ncclLsaReduceSumCopy<T, Coop, IntCount, UNROLL>(coop, ncclSymPtr<T>(srcWindow, srcOffset), team,
                                                  ncclSymPtr<T>(dstWindow, dstOffset), team, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumCopy(Coop coop, ncclWindow_t srcWindow, size_t srcOffset,
                                             ncclWindow_t dstWindow, size_t dstOffset, IntCount count,
                                             ncclDevComm_t devComm) {
  ncclTeam lsa = ncclTeamLsa(devComm);
  ncclLsaReduceSumCopy<T, Coop, IntCount, UNROLL>(coop, ncclSymPtr<T>(srcWindow, srcOffset), lsa,
                                                  ncclSymPtr<T>(dstWindow, dstOffset), lsa, count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumCopy(Coop, ncclSymPtr<T>, ncclMultimemHandle, ncclSymPtr<T>,
                                                  ncclMultimemHandle, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumCopy(Coop, T*, T*, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumCopy(Coop, ncclWindow_t, size_t, ncclMultimemHandle, ncclWindow_t, size_t,
                                                  ncclMultimemHandle, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumMultimemCopy(Coop, ncclSymPtr<T>, ncclTeam, ncclSymPtr<T>, ncclMultimemHandle,
                                                     IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLsaReduceSumMultimemCopy(Coop, ncclSymPtr<T>, ncclTeam, T*, IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumLsaCopy(Coop, ncclSymPtr<T>, ncclMultimemHandle, ncclSymPtr<T>, ncclTeam,
                                                     IntCount) {
  nccl::detail::multimemUnavailable();
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclMultimemReduceSumLsaCopy(Coop, T*, ncclSymPtr<T>, ncclTeam, IntCount) {
  nccl::detail::multimemUnavailable();
}
/* Sources src, src + srcDispl, ... summed into dst, dst + dstDispl, ... (displacements in elements). */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
NCCL_DEVICE_INLINE void ncclLocalReduceSumCopy(Coop coop, int nSrc, T* src, size_t srcDispl, int nDst, T* dst,
                                               size_t dstDispl, IntCount count) {
  nccl::detail::reduceCopy<T, nccl::utility::OpSum<T>, UNROLL>(
      coop, [=](int i) { return src + size_t(i) * srcDispl; }, nSrc, [=](int i) { return dst + size_t(i) * dstDispl; },
      nDst, nccl::utility::OpSum<T>{}, count);
}
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_REDUCE_COPY_H_ */
