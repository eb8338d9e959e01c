#include "watch/abort_flag.h"

namespace braid::watch {
namespace {

// The kernels read the word through the mapping with volatile loads; a release store is enough.
void writeKernelWord(int* word) { __atomic_store_n(word, 1, __ATOMIC_RELEASE); }

}  // namespace

void AbortFlag::raise(int scope) {
  word_.fetch_or(scope & kAbortAll, std::memory_order_acq_rel);
  if ((scope & kAbortKernels) == 0) return;
  std::lock_guard<std::mutex> lock(kernelWordMutex_);
  if (kernelWord_ != nullptr) writeKernelWord(kernelWord_);
}

void AbortFlag::lendKernelWord(int* word) {
  std::lock_guard<std::mutex> lock(kernelWordMutex_);
  kernelWord_ = word;
  if (word != nullptr && raised(kAbortKernels)) writeKernelWord(word);
}

}  // namespace braid::watch
