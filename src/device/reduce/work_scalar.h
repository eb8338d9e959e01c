// Host side of DevWork::scalar, the factor or divisor a reduction functor is built with.
//
// avgScalarBits: ncclAvg, which makes FuncPreMulSum (floating types) or FuncSumPostDiv (integer
// types) compute an average over nranks, with NCCL 2.28's rounding (src/enqueue.cc hostToDevRedOp
// of github.com/NVIDIA/nccl):
//   half      bits of __float2half(float(1.0 / nranks))
//   bfloat16  bits of __float2bfloat16(float(1.0 / nranks))
//   float     bits of float(1.0 / nranks)
//   double    bits of 1.0 / nranks
//   fp8       NCCL rounds float(1.0 / nranks) to fp8 (__nv_cvt_float_to_fp8, __NV_SATFINITE) and the
//             kernel widens that to half; we return the bits of that half (an exact widening), since
//             FuncPreMulSum takes fp8 scalars as half bits. So 1/3 is 0.34375 in e4m3, not 0.3333.
//   integers  nranks itself: the divisor of FuncSumPostDiv.
// Returns 0 for nranks < 1 or a dtype out of range (callers validate both before).
//
// preMulScalarBits: a ncclRedOpCreatePreMulSum scalar given as the bytes of one element of dtype
// (valueBits, little endian): the same bits, but fp8 widened to half bits (exact) as FuncPreMulSum
// takes them. The kernel does the same for a scalar it reads from device memory
// (work_scalar_device.h).
#pragma once

#include <nccl.h>

#include <cstdint>

namespace braid {

[[nodiscard]] uint64_t avgScalarBits(ncclDataType_t dtype, int nranks);
[[nodiscard]] uint64_t preMulScalarBits(ncclDataType_t dtype, uint64_t valueBits);

}  // namespace braid
