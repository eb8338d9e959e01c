// ncclMemAlloc/ncclMemFree (register/mem_alloc), ncclCommRegister/Deregister (launch/reg_launch.cc),
// ncclRedOpCreatePreMulSum/ncclRedOpDestroy (launch/red_ops.h), and the window and device-API entry
// points that have not landed yet: each of those fails with a WARN naming the feature (and the
// issue that brings it stays open).
#include "api/api_guard.h"
#include "api/export.h"
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
  return braid::apiGuard("ncclCommWindowRegister", [&] {
    NCCLCHECK(braid::commCheckUsable(comm, "ncclCommWindowRegister"));
    return braid::notImplemented("ncclCommWindowRegister", "symmetric memory windows");
  });
}

BRAID_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return braid::apiGuard("ncclCommWindowDeregister", [&] {
    NCCLCHECK(braid::commCheckHandle(comm, "ncclCommWindowDeregister"));
    return braid::notImplemented("ncclCommWindowDeregister", "symmetric memory windows");
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
