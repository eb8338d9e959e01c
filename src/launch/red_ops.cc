#include "launch/red_ops.h"

#include <atomic>
#include <cstring>

#include "launch/coll_task.h"
#include "util/dtype.h"
#include "util/log.h"

namespace braid {
namespace {

// Tags 1..kMaxTag: the largest handle, ncclNumOps + kMaxTag * kSlotsPerTable + kSlotsPerTable - 1,
// stays below ncclMaxRedOp.
constexpr uint32_t kMaxTag = 0x7ffe;
static_assert(static_cast<int64_t>(ncclNumOps) + int64_t{kMaxTag} * UserRedOps::kSlotsPerTable +
                      UserRedOps::kSlotsPerTable - 1 <=
                  static_cast<int64_t>(ncclMaxRedOp),
              "every handle must be a valid ncclRedOp_t");
std::atomic<uint32_t> gNextTag{0};

uint32_t nextTag() { return gNextTag.fetch_add(1, std::memory_order_relaxed) % kMaxTag + 1; }

}  // namespace

UserRedOps::UserRedOps() : tag_(nextTag()) {}

int64_t UserRedOps::slotOf(ncclRedOp_t op) const {
  const int64_t raw = static_cast<int64_t>(op) - static_cast<int64_t>(ncclNumOps);
  if (raw < 0 || raw / kSlotsPerTable != tag_) return -1;
  const int64_t slot = raw % kSlotsPerTable;
  return slot < static_cast<int64_t>(live_.size()) && live_[slot] ? slot : -1;
}

ncclResult_t UserRedOps::create(const void* scalar, ncclDataType_t dtype, ncclScalarResidence_t residence,
                                ncclRedOp_t* op) {
  const size_t elemSize = dtypeSize(dtype);
  if (op == nullptr || scalar == nullptr || elemSize == 0 ||
      (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)) {
    WARN("ncclRedOpCreatePreMulSum: %s", op == nullptr       ? "op is NULL"
                                         : scalar == nullptr ? "scalar is NULL"
                                         : elemSize == 0     ? "datatype is invalid"
                                                             : "residence is neither ncclScalarDevice nor "
                                                               "ncclScalarHostImmediate");
    return ncclInvalidArgument;
  }
  PreMulSumOp entry;
  entry.dtype = dtype;
  if (residence == ncclScalarHostImmediate) {
    std::memcpy(&entry.valueBits, scalar, elemSize);  // little endian: the low bytes
  } else {
    entry.devScalar = scalar;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  size_t slot = 0;
  while (slot < live_.size() && live_[slot]) slot++;
  if (slot == kSlotsPerTable) {
    WARN("ncclRedOpCreatePreMulSum: this communicator already holds %u ops; destroy some first", kSlotsPerTable);
    return ncclInvalidUsage;
  }
  if (slot == live_.size()) {
    ops_.emplace_back();
    live_.push_back(false);
  }
  ops_[slot] = entry;
  live_[slot] = true;
  *op = static_cast<ncclRedOp_t>(static_cast<int64_t>(ncclNumOps) + static_cast<int64_t>(tag_) * kSlotsPerTable +
                                 static_cast<int64_t>(slot));
  return ncclSuccess;
}

ncclResult_t UserRedOps::destroy(ncclRedOp_t op) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t slot = slotOf(op);
  if (slot < 0) {
    WARN(
        "ncclRedOpDestroy: op %d is not an op of this communicator from ncclRedOpCreatePreMulSum (built-in, "
        "destroyed, or created on another communicator)",
        static_cast<int>(op));
    return ncclInvalidArgument;
  }
  live_[slot] = false;
  return ncclSuccess;
}

ncclResult_t UserRedOps::find(ncclRedOp_t op, ncclDataType_t dtype, const char* caller, PreMulSumOp* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t slot = slotOf(op);
  if (slot < 0) {
    WARN("%s: op %d is neither a built-in reduction nor a live ncclRedOpCreatePreMulSum op of this communicator",
         caller, static_cast<int>(op));
    return ncclInvalidArgument;
  }
  if (ops_[slot].dtype != dtype) {
    WARN("%s: op %d was created for datatype %d, not for the call's datatype %d", caller, static_cast<int>(op),
         static_cast<int>(ops_[slot].dtype), static_cast<int>(dtype));
    return ncclInvalidArgument;
  }
  *out = ops_[slot];
  return ncclSuccess;
}

}  // namespace braid
