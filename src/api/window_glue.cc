#include "api/window_glue.h"

#include "core/teams.h"
#include "cuda/capture_mode.h"
#include "cuda/scoped_device.h"
#include "launch/enqueue.h"
#include "util/check.h"

namespace braid {
namespace {

window::WindowContext contextOf(ncclComm* comm) {
  window::WindowContext ctx;
  ctx.rank = comm->rank_;
  ctx.nranks = comm->nranks_;
  ctx.cudaDev = comm->cudaDev_;
  ctx.commHash = comm->commHash_;
  ctx.bootstrap = comm->bootstrap_.get();
  ctx.abortFlag = comm->watch_.abortFlag().hostWord();
  ctx.places = placesOf(comm->peers_);
  const LsaLayout lsa = lsaLayoutOf(comm->peers_, comm->rank_);
  ctx.lsaSize = lsa.size;
  ctx.lsaRank = lsa.rank;
  ctx.numRmaCtx = comm->config_.rma.numRmaCtx;
  ctx.numRmaSig = comm->config_.rma.numRmaSig == NCCL_CONFIG_UNDEF_INT ? 1 : comm->config_.rma.numRmaSig;
  ctx.openNetwork = [comm](net::Network** out) { return networkOf(comm, out); };
  ctx.asyncError = [comm](ncclResult_t error) {
    ncclResult_t expected = ncclSuccess;
    comm->asyncError_.compare_exchange_strong(expected, error);
  };
  ctx.peerFailed = [comm] {
    const ncclResult_t async = comm->asyncError_.load();
    return async != ncclSuccess && async != ncclInProgress;
  };
  return ctx;
}

}  // namespace

ncclResult_t commWindows(ncclComm* comm, bool create, window::Manager** out) {
  *out = static_cast<window::Manager*>(comm->windows_.get());
  if (*out != nullptr || !create) return ncclSuccess;
  RelaxedCaptureMode relaxed;
  ScopedDevice device(comm->cudaDev_);
  std::unique_ptr<window::Manager> made;
  NCCLCHECK(window::Manager::create(contextOf(comm), &made));
  *out = made.get();
  comm->windows_ = std::move(made);
  return ncclSuccess;
}

}  // namespace braid
