// The size of an element of each ncclDataType_t, in one place for the library, braid-perf and the
// tests. Header only and nccl.h only, so that code which uses nothing else of Braid's internals
// (braid-perf, the API-level GPU tests) can use it too.
//
// Device code does not include nccl.h: the kernels have their own devTypeSize over DevDataType
// (device/reduce/reduce_dispatch.h), which reduce_ops_test checks against this one.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace braid {

// Bytes per element of `dtype`; 0 for a value that is no ncclDataType_t.
constexpr size_t dtypeSize(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace braid
