#include "core/comm_registry.h"

#include <mutex>
#include <unordered_set>

namespace braid {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_set<const ncclComm*> comms;
};

// Never destroyed: API calls made from static destructors at exit still find it.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

void commRegistryAdd(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().comms.insert(comm);
}

void commRegistryRemove(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().comms.erase(comm);
}

bool commRegistryContains(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().comms.count(comm) != 0;
}

}  // namespace braid
