// ncclMemAlloc/ncclMemFree (register/mem_alloc), ncclCommRegister/Deregister (launch/reg_launch.cc),
// ncclCommWindowRegister/Deregister (window/manager.h), and ncclRedOpCreatePreMulSum/ncclRedOpDestroy
// (launch/red_ops.h).
#include "api/api_guard.h"
#include "api/export.h"
#include "api/window_glue.h"
#include "core/comm.h"
#include "launch/enqueue.h"
#include "register/mem_alloc.h"
#include "util/check.h"

BRAID_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return braid::apiGuard("ncclMemAlloc", [&] { return braid::reg::memAlloc(ptr, size); });
}

BRAID_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t ncclMemFree(void* ptr) {
  return braid::apiGuard("ncclMemFree", [&] { return braid::reg::memFree(ptr); });
}

BRAID_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return braid::apiGuard("ncclCommRegister", [&] { return braid::commRegister(comm, buff, size, handle); });
}

BRAID_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return braid::apiGuard("ncclCommDeregister", [&] { return braid::commDeregister(comm, handle); });
}

BRAID_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
          int winFlags);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  const char* caller = "ncclCommWindowRegister";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckUsable(comm, caller));
    // A rank with a bad argument still takes part in the collective registration, refusing it, so
    // that the other ranks fail with it instead of waiting for it.
    ncclResult_t refusal = ncclSuccess;
    if (win == nullptr) {
      WARN("%s: rank %d: win is NULL", caller, comm->rank_);
      refusal = ncclInvalidArgument;
    } else {
      *win = nullptr;
    }
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(braid::commWindows(comm, true, &windows));
    auto job = [windows, buff, size, winFlags, refusal, win] {
      ncclWindow_t made = nullptr;
      NCCLCHECK(windows->registerWindow(buff, size, winFlags, refusal, &made));
      if (win != nullptr) *win = made;
      return ncclSuccess;
    };
    // Inside a group the registration waits for the outermost ncclGroupEnd (as NCCL: *win is filled
    // in then), so that one thread may register a window on several GPUs' communicators at once.
    braid::GroupContext& group = braid::GroupContext::current();
    if (!group.active()) return job();
    group.deferInit(comm, job, [] {});
    return refusal;
  });
}

BRAID_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  const char* caller = "ncclCommWindowDeregister";
  return braid::apiGuard(caller, [&] {
    NCCLCHECK(braid::commCheckHandle(comm, caller));
    braid::window::Manager* windows = nullptr;
    NCCLCHECK(braid::commWindows(comm, false, &windows));
    if (windows == nullptr) {
      if (win == nullptr) return ncclSuccess;
      WARN("%s: win %p is not a window of this communicator (it has none)", caller, static_cast<void*>(win));
      return ncclInvalidArgument;
    }
    return windows->deregisterWindow(win);
  });
}

BRAID_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
          ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  return braid::apiGuard("ncclRedOpCreatePreMulSum",
                         [&] { return braid::redOpCreatePreMulSum(comm, op, scalar, datatype, residence); });
}

BRAID_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return braid::apiGuard("ncclRedOpDestroy", [&] { return braid::redOpDestroy(comm, op); });
}
