// The set of live communicators of this process, so that a stale or foreign ncclComm_t is
// recognized without dereferencing it.
#pragma once

#include <functional>

struct ncclComm;

namespace braid {

void commRegistryAdd(const ncclComm* comm);
// Once it returns, commRegistryForEach is not visiting comm and will not (it waits for a visit in
// progress), so comm may be torn down.
void commRegistryRemove(const ncclComm* comm);
bool commRegistryContains(const ncclComm* comm);
// Calls fn on every live communicator in turn (one thread at a time may do this: the peer watch).
// The registry is not locked while fn runs, so fn may take its time; removing the communicator fn
// is visiting waits for fn to return. fn must not remove communicators.
void commRegistryForEach(const std::function<void(ncclComm*)>& fn);

}  // namespace braid
