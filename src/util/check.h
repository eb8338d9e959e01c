// Propagate-only check macros. Each failure path has already logged one WARN at the place that
// knows what failed; these macros only pass the result up (with a TRACE of where it went).
#pragma once

#include <nccl.h>

#include <cerrno>
#include <cstring>

#include "util/log.h"

// Evaluate an expression returning ncclResult_t; return it from the caller if it is an error.
#define NCCLCHECK(call)                                                           \
  do {                                                                            \
    ncclResult_t braidRes_ = (call);                                              \
    if (braidRes_ != ncclSuccess && braidRes_ != ncclInProgress) {                \
      TRACE(::braid::kLogAll, "%s:%d -> %d", __FILE__, __LINE__, (int)braidRes_); \
      return braidRes_;                                                           \
    }                                                                             \
  } while (0)

// For system calls that return -1 and set errno: WARN with the errno text and return
// ncclSystemError.
#define SYSCHECK(call, what)                                                         \
  do {                                                                               \
    if ((call) == -1) {                                                              \
      int braidErr_ = errno;                                                         \
      WARN("%s failed: %s (errno %d)", (what), std::strerror(braidErr_), braidErr_); \
      return ncclSystemError;                                                        \
    }                                                                                \
  } while (0)
