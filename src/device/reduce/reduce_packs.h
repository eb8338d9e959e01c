// The elementwise application of a reduction functor (reduce_functors.h) to packs of elements
// (uint64_t or uint4 words moved by the protocols).
//
// The pack helpers apply a functor to every element of a pack. Half and bfloat16 pairs use the
// packed intrinsics (__hadd2, ...), fp8 lanes go through half2 pairs (two cvt per four bytes), the
// 8-bit integer sum uses a SIMD-within-a-register add, and the rest works lane by lane on 32-bit
// words (64-bit types on 64-bit halves of the pack).
#pragma once

#if !defined(__CUDACC__)
#error "reduce_packs.h is CUDA code: include it from .cu files only"
#endif

#include <cstdint>

#include "device/reduce/reduce_functors.h"

namespace braid {

// ---- Packs: uint64_t or uint4, seen as 32-bit words (and 64-bit halves for 8-byte types). ----
namespace reduce_detail {

template <typename Pack>
struct PackWords;
template <>
struct PackWords<uint64_t> {
  static constexpr int kWords = 2;
  BRAID_RED_HD static uint32_t get(const uint64_t& p, int i) { return static_cast<uint32_t>(p >> (32 * i)); }
  BRAID_RED_HD static void set(uint64_t& p, int i, uint32_t w) {
    p = (p & ~(uint64_t{0xffffffffu} << (32 * i))) | (static_cast<uint64_t>(w) << (32 * i));
  }
  BRAID_RED_HD static uint64_t get64(const uint64_t& p, int /*i*/) { return p; }
  BRAID_RED_HD static void set64(uint64_t& p, int /*i*/, uint64_t v) { p = v; }
};
template <>
struct PackWords<uint4> {
  static constexpr int kWords = 4;
  BRAID_RED_HD static uint32_t get(const uint4& p, int i) { return i == 0 ? p.x : i == 1 ? p.y : i == 2 ? p.z : p.w; }
  BRAID_RED_HD static void set(uint4& p, int i, uint32_t w) {
    if (i == 0) p.x = w;
    if (i == 1) p.y = w;
    if (i == 2) p.z = w;
    if (i == 3) p.w = w;
  }
  BRAID_RED_HD static uint64_t get64(const uint4& p, int i) {
    return i == 0 ? (p.x | (static_cast<uint64_t>(p.y) << 32)) : (p.z | (static_cast<uint64_t>(p.w) << 32));
  }
  BRAID_RED_HD static void set64(uint4& p, int i, uint64_t v) {
    set(p, 2 * i, static_cast<uint32_t>(v));
    set(p, 2 * i + 1, static_cast<uint32_t>(v >> 32));
  }
};

// f(T, T) -> T on each lane of two 32-bit words (sizeof(T) <= 4).
template <typename T, typename F>
BRAID_RED_HD uint32_t mapLanes(uint32_t a, uint32_t b, F f) {
  using B = BitsOf<T>;
  constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 32 / kBits; ++i) {
    const T x = B::from(static_cast<typename B::U>(a >> (i * kBits)));
    const T y = B::from(static_cast<typename B::U>(b >> (i * kBits)));
    out |= static_cast<uint32_t>(B::to(f(x, y))) << (i * kBits);
  }
  return out;
}

// g(V, V) -> V on each pair of lanes of two 32-bit words (types with Pair<T>::kHas).
template <typename T, typename G>
BRAID_RED_HD uint32_t mapPairs(uint32_t a, uint32_t b, G g) {
  using P = Pair<T>;
  constexpr int kBits = 8 * static_cast<int>(sizeof(typename P::Bits));
  uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 32 / kBits; ++i) {
    const typename P::V x = P::load(static_cast<typename P::Bits>(a >> (i * kBits)));
    const typename P::V y = P::load(static_cast<typename P::Bits>(b >> (i * kBits)));
    out |= static_cast<uint32_t>(P::store(g(x, y))) << (i * kBits);
  }
  return out;
}

// Four byte lanes added at once: the low 7 bits of each lane are added without carrying into the
// next lane, then the top bit of each lane is the xor of the two top bits and that carry.
BRAID_RED_HD uint32_t addBytes(uint32_t a, uint32_t b) {
  constexpr uint32_t kLow7 = 0x7f7f7f7fu;
  return ((a & kLow7) + (b & kLow7)) ^ ((a ^ b) & ~kLow7);
}

template <typename Fn, typename T>
BRAID_RED_HD uint32_t reduceWord(const Fn& fn, uint32_t a, uint32_t b) {
  if constexpr (Pair<T>::kHas) {
    using V = typename Pair<T>::V;
    return mapPairs<T>(a, b, [&](V x, V y) { return fn.reduceC(x, y); });
  } else if constexpr (sizeof(T) == 1 && Fn::kReduceIsSum) {
    return addBytes(a, b);
  } else {
    return mapLanes<T>(a, b, [&](T x, T y) { return fn(x, y); });
  }
}

template <typename Fn, typename T>
BRAID_RED_HD uint32_t preOpWord(const Fn& fn, uint32_t a) {
  if constexpr (Pair<T>::kHas) {
    using V = typename Pair<T>::V;
    return mapPairs<T>(a, a, [&](V x, V /*unused*/) { return fn.preOpC(x); });
  } else {
    return mapLanes<T>(a, a, [&](T x, T /*unused*/) { return fn.preOp(x); });
  }
}

template <typename Fn, typename T>
BRAID_RED_HD uint32_t postOpWord(const Fn& fn, uint32_t a) {
  return mapLanes<T>(a, a, [&](T x, T /*unused*/) { return fn.postOp(x); });
}

template <typename Fn, typename T, typename Pack>
BRAID_RED_HD void checkPack() {
  static_assert(std::is_same<typename Fn::EltType, T>::value, "functor and element type differ");
  static_assert(sizeof(Pack) % sizeof(T) == 0, "a pack holds whole elements");
  static_assert(std::is_same<Pack, uint64_t>::value || std::is_same<Pack, uint4>::value, "Pack is uint64_t or uint4");
}

}  // namespace reduce_detail

// fn(a[i], b[i]) for every element i of the packs.
template <typename Fn, typename T, typename Pack>
BRAID_RED_HD Pack applyReduce(const Fn& fn, Pack a, Pack b) {
  reduce_detail::checkPack<Fn, T, Pack>();
  using W = reduce_detail::PackWords<Pack>;
  using B = reduce_detail::BitsOf<T>;
  Pack out = a;
  if constexpr (sizeof(T) == 8) {
#pragma unroll
    for (int i = 0; i < W::kWords / 2; ++i) {
      W::set64(out, i, B::to(fn(B::from(W::get64(a, i)), B::from(W::get64(b, i)))));
    }
  } else {
#pragma unroll
    for (int i = 0; i < W::kWords; ++i)
      W::set(out, i, reduce_detail::reduceWord<Fn, T>(fn, W::get(a, i), W::get(b, i)));
  }
  return out;
}

// fn.preOp(a[i]) for every element; returns `a` itself when the functor has no pre-op.
template <typename Fn, typename T, typename Pack>
BRAID_RED_HD Pack applyPreOp(const Fn& fn, Pack a) {
  reduce_detail::checkPack<Fn, T, Pack>();
  if constexpr (!Fn::kHasPreOp) {
    return a;
  } else {
    using W = reduce_detail::PackWords<Pack>;
    using B = reduce_detail::BitsOf<T>;
    Pack out = a;
    if constexpr (sizeof(T) == 8) {
#pragma unroll
      for (int i = 0; i < W::kWords / 2; ++i) W::set64(out, i, B::to(fn.preOp(B::from(W::get64(a, i)))));
    } else {
#pragma unroll
      for (int i = 0; i < W::kWords; ++i) W::set(out, i, reduce_detail::preOpWord<Fn, T>(fn, W::get(a, i)));
    }
    return out;
  }
}

// fn.postOp(a[i]) for every element; returns `a` itself when the functor has no post-op.
template <typename Fn, typename T, typename Pack>
BRAID_RED_HD Pack applyPostOp(const Fn& fn, Pack a) {
  reduce_detail::checkPack<Fn, T, Pack>();
  if constexpr (!Fn::kHasPostOp) {
    return a;
  } else {
    using W = reduce_detail::PackWords<Pack>;
    using B = reduce_detail::BitsOf<T>;
    Pack out = a;
    if constexpr (sizeof(T) == 8) {
#pragma unroll
      for (int i = 0; i < W::kWords / 2; ++i) W::set64(out, i, B::to(fn.postOp(B::from(W::get64(a, i)))));
    } else {
#pragma unroll
      for (int i = 0; i < W::kWords; ++i) W::set(out, i, reduce_detail::postOpWord<Fn, T>(fn, W::get(a, i)));
    }
    return out;
  }
}

}  // namespace braid
