#include "launch/coll_task.h"

#include <algorithm>

namespace braid {

bool dtypeIsFloating(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat16:
    case ncclFloat32:
    case ncclFloat64:
    case ncclBfloat16:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return true;
    default:
      return false;
  }
}

size_t collSendBytes(const CollTask& task, int nranks) {
  const size_t blocks = task.coll == CollId::kReduceScatter ? static_cast<size_t>(nranks) : 1;
  return task.count * dtypeSize(task.dtype) * blocks;
}

size_t collRecvBytes(const CollTask& task, int nranks) {
  const size_t blocks = task.coll == CollId::kAllGather ? static_cast<size_t>(nranks) : 1;
  return task.count * dtypeSize(task.dtype) * blocks;
}

size_t collBytes(const CollTask& task, int nranks) {
  return std::max(collSendBytes(task, nranks), collRecvBytes(task, nranks));
}

}  // namespace braid
