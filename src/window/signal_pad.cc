#include "window/signal_pad.h"

#include "cuda/cuda_check.h"
#include "util/check.h"

namespace braid::window {

ncclResult_t SignalPad::create(const CudaDriver* drv, int cudaDev, const PadLayout& layout, bool exportable,
                               cudaStream_t stream, std::unique_ptr<SignalPad>* out) {
  // In floating point: the product of a huge configuration would wrap in 64 bits.
  const double bytes = 24.0 * layout.nCtx * layout.nSig * layout.nranks;
  if (bytes > static_cast<double>(kMaxPadBytes)) {
    WARN("one-sided signals: %d contexts x %d signals x %d ranks need %llu bytes of signal memory, more than %llu",
         layout.nCtx, layout.nSig, layout.nranks, static_cast<unsigned long long>(bytes),
         static_cast<unsigned long long>(kMaxPadBytes));
    return ncclInvalidUsage;
  }
  std::unique_ptr<VmmMemory> memory;
  NCCLCHECK(VmmMemory::allocate(drv, cudaDev, layout.bytes(), exportable, "one-sided signal memory", LogLevel::kWarn,
                                &memory));
  const std::string what = "one-sided signal memory on GPU " + std::to_string(cudaDev);
  CUDACHECK_AT(what, cudaMemsetAsync(memory->ptr(), 0, memory->bytes(), stream));
  CUDACHECK_AT(what, cudaStreamSynchronize(stream));
  out->reset(new SignalPad(layout, std::move(memory)));
  return ncclSuccess;
}

}  // namespace braid::window
