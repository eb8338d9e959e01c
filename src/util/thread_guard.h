// Thread bodies that never let an exception escape.
//
// An exception that leaves the function a std::thread runs calls std::terminate: the whole process
// aborts. Every thread Braid starts runs its body through guardThread, which catches everything,
// logs one WARN naming the thread and what was thrown, and turns it into a result the thread's
// owner reports like any other failure (ncclSystemError for std::bad_alloc, ncclInternalError for
// anything else). A body returning ncclResult_t has its result passed through; a void body gives
// ncclSuccess when it returns normally.
#pragma once

#include <nccl.h>

#include <type_traits>
#include <utility>

namespace braid {

// The result for the exception being handled (call only from a catch block); WARNs once, naming
// `thread`.
ncclResult_t threadExceptionResult(const char* thread) noexcept;

template <class Body>
ncclResult_t guardThread(const char* thread, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
      body();
      return ncclSuccess;
    } else {
      return body();
    }
  } catch (...) {
    return threadExceptionResult(thread);
  }
}

}  // namespace braid
