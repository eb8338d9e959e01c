// The windows as the collectives see them (core/windows_base.h): where a symmetric kernel finds its
// peers' buffers, and the uses that keep a window mapped while a collective on it may run.
#include "util/log.h"
#include "window/manager.h"

namespace braid::window {

bool Manager::symmetricCopies(const void* ptr, uint64_t bytes, SymmetricCopies* out) const {
  if (ptr == nullptr || bytes == 0) return false;
  const Window* w = windows_.holding(ptr, bytes);
  if (w == nullptr || w->info->role != WindowRole::kUser) return false;
  const WindowInfo& info = *w->info;
  if ((info.winFlags & kWinCollSymmetric) == 0 || info.lsaSize != info.nranks || info.lsaBase() != 0) return false;
  const uint64_t offset = static_cast<uint64_t>(static_cast<const char*>(ptr) - info.userPtr);
  for (uint64_t size : info.worldBytes) {
    if (offset > size || bytes > size - offset) return false;  // a rank registered less
  }
  out->rank0 = info.lsaPtr(0, offset);
  out->stride = info.stride;
  return true;
}

ncclResult_t Manager::noteCollectiveUse(const void* ptr, bool graph, cudaStream_t stream) {
  Window* w = windows_.holding(ptr, 1);
  if (w == nullptr) {
    WARN("%s: no window holds %p, which a symmetric collective just used", ctx_.me().c_str(), ptr);
    return ncclInternalError;
  }
  return noteUse(w, graph, stream);
}

}  // namespace braid::window
