#include "core/comm_registry.h"

#include <condition_variable>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace braid {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_set<const ncclComm*> comms;
  // The communicator commRegistryForEach's fn is working on (null: none), and the signal that it
  // has moved on, for commRegistryRemove to wait on.
  const ncclComm* visiting = nullptr;
  std::condition_variable visitDone;
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
  Registry& reg = registry();
  std::unique_lock<std::mutex> lock(reg.mutex);
  reg.comms.erase(comm);
  reg.visitDone.wait(lock, [&] { return reg.visiting != comm; });
}

bool commRegistryContains(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().comms.count(comm) != 0;
}

// The lock is held only to pick the next communicator: a hang report gathers for up to seconds,
// and every API call checks its handle here (ncclCommAbort included, which a user reaches for
// exactly while something hangs).
void commRegistryForEach(const std::function<void(ncclComm*)>& fn) {
  Registry& reg = registry();
  std::vector<const ncclComm*> snapshot;
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    snapshot.assign(reg.comms.begin(), reg.comms.end());
  }
  for (const ncclComm* comm : snapshot) {
    {
      std::lock_guard<std::mutex> lock(reg.mutex);
      if (reg.comms.count(comm) == 0) continue;  // removed meanwhile: perhaps freed
      reg.visiting = comm;
    }
    // The registry keeps const pointers to say it never changes a communicator; its owners may.
    fn(const_cast<ncclComm*>(comm));
    {
      std::lock_guard<std::mutex> lock(reg.mutex);
      reg.visiting = nullptr;
    }
    reg.visitDone.notify_all();
  }
}

}  // namespace braid
