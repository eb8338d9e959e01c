// A queued collective's zero-copy plan, made in the connect phase by the registration exchange
// (launch/buffer_registration.h) and consumed by the collective's plan (launch/planned_coll.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "device/dev_types.h"
#include "plan/plan.h"
#include "register/registry.h"
#include "util/check.h"

namespace braid {

struct RegisteredLaunch {
  bool direct = false;  // every rank goes zero-copy: launch with `peers` and `decision`
  plan::Decision decision{};
  DevRegPeers peers{};
  reg::Registration* send = nullptr;
  reg::Registration* recv = nullptr;

  // After its kernel was enqueued on `stream`: the registrations it used stay until it has run.
  [[nodiscard]] ncclResult_t noteUse(reg::Registry* registry, cudaStream_t stream) const {
    if (recv != nullptr) NCCLCHECK(registry->noteUse(recv, stream));
    if (send != nullptr && send != recv) NCCLCHECK(registry->noteUse(send, stream));
    return ncclSuccess;
  }
};

}  // namespace braid
