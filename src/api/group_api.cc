// Group entry points.
#include "api/api_guard.h"
#include "api/export.h"
#include "core/group.h"

BRAID_API(ncclResult_t, ncclGroupStart);
ncclResult_t ncclGroupStart() {
  return braid::apiGuard("ncclGroupStart", [] {
    braid::GroupContext::current().start();
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclGroupEnd);
ncclResult_t ncclGroupEnd() {
  return braid::apiGuard("ncclGroupEnd", [] { return braid::GroupContext::current().end(); });
}

BRAID_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return braid::apiGuard("ncclGroupSimulateEnd", [] {
    return braid::notImplemented("ncclGroupSimulateEnd", "the cost-model simulation of a group");
  });
}
