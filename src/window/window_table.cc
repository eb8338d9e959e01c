#include "window/window_table.h"

#include <cstring>
#include <string>

#include "cuda/cuda_check.h"
#include "util/check.h"

namespace braid::window {

WindowTable::~WindowTable() {
  for (Block* b : device_) (void)cudaFree(b);
}

ncclResult_t WindowTable::addBlock(cudaStream_t stream) {
  void* mem = nullptr;
  CUDACHECK_AT(std::string("the device table of windows"), cudaMalloc(&mem, sizeof(Block)));
  Block* block = static_cast<Block*>(mem);
  device_.push_back(block);
  mirror_.emplace_back();
  std::memset(&mirror_.back(), 0, sizeof(Block));
  CUDACHECK(cudaMemcpyAsync(block, &mirror_.back(), sizeof(Block), cudaMemcpyHostToDevice, stream));
  if (device_.size() > 1) {
    Block& prev = mirror_[mirror_.size() - 2];
    prev.next = reinterpret_cast<uintptr_t>(block);
    CUDACHECK(cudaMemcpyAsync(&device_[device_.size() - 2]->next, &prev.next, sizeof(prev.next), cudaMemcpyHostToDevice,
                              stream));
  }
  CUDACHECK(cudaStreamSynchronize(stream));
  return ncclSuccess;
}

ncclResult_t WindowTable::head(cudaStream_t stream, void** out) {
  if (device_.empty()) NCCLCHECK(addBlock(stream));
  *out = device_.front();
  return ncclSuccess;
}

ncclResult_t WindowTable::writeEntry(size_t block, int index, cudaStream_t stream) {
  CUDACHECK(cudaMemcpyAsync(&device_[block]->entries[index], &mirror_[block].entries[index], sizeof(Entry),
                            cudaMemcpyHostToDevice, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  return ncclSuccess;
}

ncclResult_t WindowTable::add(uintptr_t base, uint64_t size, const void* window, cudaStream_t stream) {
  for (size_t b = 0;; ++b) {
    if (b == device_.size()) NCCLCHECK(addBlock(stream));
    for (int i = 0; i < kEntriesPerBlock; ++i) {
      Entry& e = mirror_[b].entries[i];
      if (e.window != nullptr) continue;
      e = Entry{base, size, window};
      return writeEntry(b, i, stream);
    }
  }
}

ncclResult_t WindowTable::remove(const void* window, cudaStream_t stream) {
  if (window == nullptr) return ncclSuccess;
  for (size_t b = 0; b < device_.size(); ++b) {
    for (int i = 0; i < kEntriesPerBlock; ++i) {
      Entry& e = mirror_[b].entries[i];
      if (e.window != window) continue;
      e = Entry{0, 0, nullptr};
      return writeEntry(b, i, stream);
    }
  }
  return ncclSuccess;
}

}  // namespace braid::window
