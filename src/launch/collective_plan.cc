// The plan of a queued collective (launch/planned_coll.h): the one call of the planner and the one
// place a collective's device work is filled.
#include "core/comm.h"
#include "device/reduce/work_scalar.h"
#include "launch/collective_engine.h"
#include "launch/planned_coll.h"
#include "launch/share_membership.h"
#include "launch/symmetric_lookup.h"
#include "util/check.h"
#include "util/dtype.h"

namespace braid {
namespace {

// The operation's buffers, type and reduction as the kernels take them.
DevWork workOf(const CollTask& task, int nranks) {
  DevWork work{};
  work.sendbuff = task.sendbuff;
  work.recvbuff = task.recvbuff;
  work.count = task.count;
  work.root = task.root;
  work.coll = static_cast<uint8_t>(task.coll);
  work.dtype = static_cast<uint8_t>(task.dtype);
  const DevReduction reduction = resolveReduction(task, nranks);
  work.redOp = static_cast<uint8_t>(reduction.op);
  work.scalar = reduction.scalar;
  work.scalarPtr = reduction.scalarPtr;
  return work;
}

}  // namespace

DevReduction resolveReduction(const CollTask& task, int nranks) {
  DevReduction r;
  switch (task.op) {
    case ncclProd:
      r.op = DevRedOp::kProd;
      break;
    case ncclMax:
      r.op = DevRedOp::kMax;
      break;
    case ncclMin:
      r.op = DevRedOp::kMin;
      break;
    case ncclAvg:
      if (dtypeIsFloating(task.dtype)) {
        r.op = DevRedOp::kPreMulSum;
        r.scalar = avgScalarBits(task.dtype, nranks);
      } else {
        r.op = DevRedOp::kSumPostDiv;
        r.scalar = static_cast<uint64_t>(nranks);
      }
      break;
    default:
      if (hasUserOp(task)) {
        r.op = DevRedOp::kPreMulSum;
        r.scalar = preMulScalarBits(task.dtype, task.scalarBits);
        r.scalarPtr = task.scalarPtr;
      }
      break;
  }
  return r;
}

DevAlgo devAlgoOf(plan::AlgoId algo) {
  // Indexed by plan::AlgoId. The planner offers Ring, Tree and Direct only; the others have no
  // kernel here and would run as Ring.
  static constexpr DevAlgo kTable[plan::kNumAlgos] = {
      DevAlgo::kTree,    // kAlgoTree
      DevAlgo::kRing,    // kAlgoRing
      DevAlgo::kRing,    // kAlgoCollNetDirect
      DevAlgo::kRing,    // kAlgoCollNetChain
      DevAlgo::kRing,    // kAlgoNvls
      DevAlgo::kRing,    // kAlgoNvlsTree
      DevAlgo::kRing,    // kAlgoPat
      DevAlgo::kDirect,  // kAlgoDirect
  };
  static_assert(plan::kAlgoTree == 0 && plan::kAlgoRing == 1 && plan::kAlgoDirect == 7 && plan::kNumAlgos == 8,
                "kTable follows plan::AlgoId");
  return algo >= 0 && algo < plan::kNumAlgos ? kTable[algo] : DevAlgo::kRing;
}

ncclResult_t CollectiveEngine::decide(const CollTask& task, bool zeroCopy, plan::Decision* out,
                                      const plan::SymmetricBuffers& symmetric) const {
  plan::CommModel model = model_;
  const plan::Filter* filter = &filter_;
  if (zeroCopy) {
    // The zero-copy rings are Simple rings: this fits one on the zero-copy model (the copy path's
    // plan decides whether to go zero-copy at all; BufferRegistration::exchange).
    static const plan::Filter kSimpleRing = [] {
      plan::Filter f;
      (void)plan::parseFilter("Ring", "Simple", &f);
      return f;
    }();
    model = plan::zeroCopyModel(model_, task.coll);
    filter = &kSimpleRing;
  } else {
    model.userPreMulSum = hasUserOp(task);  // the plan offers no Direct for a user PreMulSum op
  }
  plan::OpConstraints op = task.options.plan;
  op.symmetric = symmetric;
  return plan::decide(model, *filter, op, task.coll, collBytes(task, ctx_.comm->nranks_), out);
}

ncclResult_t CollectiveEngine::plan(const CollTask& task, const RegisteredLaunch& registered, PlannedColl* out) const {
  const int nranks = ctx_.comm->nranks_;
  PlannedColl op;
  op.task = &task;
  if (task.count == 0) {
    op.path = PlannedColl::Path::kNothing;
  } else if (nranks == 1) {
    op.path = hasUserOp(task) ? PlannedColl::Path::kOneRankKernel : PlannedColl::Path::kCopy;
    if (op.path == PlannedColl::Path::kOneRankKernel) op.work = workOf(task, nranks);
  } else {
    op.path = PlannedColl::Path::kKernel;
    op.registered = registered;
    op.decision = registered.decision;
    SymmetricLookup symmetric;
    if (!registered.direct) {
      symmetric = lookUpSymmetric(ctx_.comm->windows_.get(), task, nranks);
      NCCLCHECK(decide(task, /*zeroCopy=*/false, &op.decision, symmetric.buffers));
    }
    DevWork& work = op.work;
    work = workOf(task, nranks);
    if (op.decision.symmetric) {
      work.symmetric = 1;
      work.sym = DevSymmetric{symmetric.send.rank0, symmetric.recv.rank0, symmetric.send.stride, symmetric.recv.stride};
    }
    work.proto = static_cast<uint8_t>(op.decision.proto);
    work.algo = static_cast<uint8_t>(devAlgoOf(op.decision.algo));
    work.twoShot = op.decision.twoShot ? 1 : 0;
    work.nChannels = op.decision.nChannels;
    work.chunkBytes = op.decision.chunkBytes;
    work.sharedSteps = ctx_.share->stepsInGroupWords() ? 1 : 0;  // see ShareMembership::connectOrReuse
  }
  *out = op;
  return ncclSuccess;
}

}  // namespace braid
