// One queued collective as its group's end plans it, once (CollectiveEngine::plan): how it runs,
// its plan::Decision and its complete device work item. The launch, ncclGroupSimulateEnd and the
// zero-copy path take what they need from here; none of them calls the planner or fills a DevWork
// of its own. The zero-copy exchange decides before the plan is made (in the connect phase) whether
// the operation goes zero-copy; its RegisteredLaunch is the plan's input, and the plan carries it.
#pragma once

#include <cstdint>

#include "device/dev_types.h"
#include "launch/coll_task.h"
#include "launch/registered_launch.h"
#include "plan/plan.h"

namespace braid {

struct PlannedColl {
  // kNothing: no element to move. kCopy: one rank, a device copy (any reduction of one value but a
  // PreMulSum is that value). kOneRankKernel: one rank with a PreMulSum op, whose premultiplication
  // still applies. kKernel: a collective kernel of more than one rank.
  enum class Path : uint8_t { kNothing, kCopy, kOneRankKernel, kKernel };

  const CollTask* task = nullptr;  // the queued operation, which outlives its plan
  Path path = Path::kNothing;
  plan::Decision decision{};  // kKernel: the copy path's plan, or the zero-copy one when registered.direct
  // kOneRankKernel and kKernel: the kernel's work, complete but for its numbering on the progress
  // board (captured, seq, waitNotes), which only the launch knows (under the launch order's lock).
  DevWork work{};
  RegisteredLaunch registered{};  // kKernel: direct when it goes zero-copy (launched with registered.peers)
};

// The reduction as the kernels apply it on `nranks` ranks, the one place ncclAvg and
// ncclRedOpCreatePreMulSum ops are resolved: Avg premultiplies by 1/nranks on floating types and
// divides the sum by nranks on integers (truncating), as NCCL defines it; a PreMulSum op
// premultiplies by its scalar (its bytes, or where kernels read it). Others map one to one.
struct DevReduction {
  DevRedOp op = DevRedOp::kSum;
  uint64_t scalar = 0;
  const void* scalarPtr = nullptr;
};
DevReduction resolveReduction(const CollTask& task, int nranks);

// The kernel algorithm of a planned one: the one table from plan::AlgoId to DevAlgo.
DevAlgo devAlgoOf(plan::AlgoId algo);

}  // namespace braid
