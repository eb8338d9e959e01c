#include "window/mem_ops.h"

#include <algorithm>
#include <string>

#include "util/check.h"
#include "util/log.h"

namespace braid::window {
namespace {

constexpr size_t kMaxBatch = 64;  // well under the driver's limit on one batch

}  // namespace

void MemOps::waitGeq(const void* addr, uint64_t value) {
  CUstreamBatchMemOpParams op{};
  op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  op.waitValue.address = reinterpret_cast<CUdeviceptr>(addr);
  op.waitValue.value64 = value;
  op.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
  ops_.push_back(op);
}

void MemOps::write(void* addr, uint64_t value) {
  CUstreamBatchMemOpParams op{};
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  op.writeValue.address = reinterpret_cast<CUdeviceptr>(addr);
  op.writeValue.value64 = value;
  op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  ops_.push_back(op);
}

ncclResult_t MemOps::enqueue(cudaStream_t stream) {
  const std::string what = "one-sided operation (stream memory operations)";
  for (size_t first = 0; first < ops_.size(); first += kMaxBatch) {
    const unsigned count = static_cast<unsigned>(std::min(kMaxBatch, ops_.size() - first));
    CUCHECK_AT(what, drv_, cuStreamBatchMemOp, reinterpret_cast<CUstream>(stream), count, ops_.data() + first, 0);
  }
  ops_.clear();
  return ncclSuccess;
}

}  // namespace braid::window
