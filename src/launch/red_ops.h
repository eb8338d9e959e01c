// ncclRedOpCreatePreMulSum / ncclRedOpDestroy: the user-defined reductions of one communicator.
//
// An op is Sum after multiplying every rank's input by that rank's scalar. The scalar is either
// copied when the op is created (ncclScalarHostImmediate) or read from device memory by every
// kernel that uses the op (ncclScalarDevice). Handles are ncclNumOps + tag * kSlotsPerTable + slot:
// the tag is drawn per table from a process-wide counter, so a handle given to another
// communicator is refused (unless 32767 tables later a tag repeats), and a destroyed one too.
//
// An operation resolves its op when it is called (find), not when its group launches: NCCL lets the
// user destroy an op as soon as the last call that names it has returned.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace braid {

struct PreMulSumOp {
  ncclDataType_t dtype = ncclFloat32;
  uint64_t valueBits = 0;           // ncclScalarHostImmediate: the scalar's bytes (little endian)
  const void* devScalar = nullptr;  // ncclScalarDevice: where kernels read it
};

class UserRedOps {
 public:
  static constexpr uint32_t kSlotsPerTable = 1u << 16;

  UserRedOps();

  // Arguments are checked here (ncclInvalidArgument with a WARN naming the bad one).
  [[nodiscard]] ncclResult_t create(const void* scalar, ncclDataType_t dtype, ncclScalarResidence_t residence,
                                    ncclRedOp_t* op);
  [[nodiscard]] ncclResult_t destroy(ncclRedOp_t op);
  // The op of a collective on `dtype` (op >= ncclNumOps): ncclInvalidArgument with a WARN naming
  // `caller` when it is not a live op of this table or was created for another datatype.
  [[nodiscard]] ncclResult_t find(ncclRedOp_t op, ncclDataType_t dtype, const char* caller, PreMulSumOp* out) const;

 private:
  // The slot of a handle of this table, or -1.
  int64_t slotOf(ncclRedOp_t op) const;

  const uint32_t tag_;
  mutable std::mutex mutex_;  // ops may be created and destroyed from any thread
  std::vector<PreMulSumOp> ops_;
  std::vector<bool> live_;
};

}  // namespace braid
