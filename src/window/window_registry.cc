#include "window/window_registry.h"

#include <map>
#include <mutex>

namespace braid::window {
namespace {

std::mutex& registryMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<const void*, std::shared_ptr<const WindowInfo>>& registry() {
  static auto* windows = new std::map<const void*, std::shared_ptr<const WindowInfo>>();  // outlives static dtors
  return *windows;
}

}  // namespace

void registryAdd(const std::shared_ptr<const WindowInfo>& info) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry()[info->handle] = info;
}

void registryRemove(ncclWindow_t handle) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().erase(handle);
}

std::shared_ptr<const WindowInfo> registryFind(ncclWindow_t handle) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto it = registry().find(handle);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace braid::window
