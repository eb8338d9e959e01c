/*
 * abi_link -- links a plain C program against libnccl.so.2 through every function of NCCL 2.32.3's host
 * API, both ncclX and pncclX: the 73 of nccl.h, the 22 of nccl_device/host.h and the two requirement
 * builders NVIDIA's library exports without a Linux declaration (abi_functions.h), plus
 * ncclResetDebugInitInternal. At run time it checks that each is defined by the library given as
 * argv[1] (so the test runs against Braid, not whatever libnccl the loader might find), that each
 * ncclX and its pncclX are the same function, and that ncclGetVersion returns the header's version
 * code. Nothing here needs a GPU.
 *
 * Every reference is weak: a function the library does not export links as NULL and fails the test
 * with its name, rather than stopping the whole build at the linker's first error.
 */
#define _GNU_SOURCE /* dladdr */
#ifndef ABI_NCCL_H
#error "build with -DABI_NCCL_H=\"/path/to/nccl.h\" -DABI_HOST_H=\"/path/to/nccl_device/host.h\""
#endif
#include ABI_NCCL_H
#include ABI_HOST_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_functions.h"

/* ncclResetDebugInit is deprecated in nccl.h; naming it here is intended. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

/*
 * What no header declares: pncclX of the device-API functions, both names of the two Windows-only
 * builders, and ncclResetDebugInitInternal. C links by name alone, so these are declared with one
 * placeholder type: the program only takes their addresses and never calls them (abi_compare checks
 * the signatures of the declared ones).
 */
typedef void AbiPlaceholder(void);
#define ABI_DECLARE_P(fn) extern AbiPlaceholder pnccl##fn;
#define ABI_DECLARE_BOTH(fn) extern AbiPlaceholder nccl##fn, pnccl##fn;
NCCL_ABI_DEVICE_FUNCTIONS(ABI_DECLARE_P, ABI_DECLARE_BOTH)
#undef ABI_DECLARE_P
#undef ABI_DECLARE_BOTH
extern AbiPlaceholder ncclResetDebugInitInternal;

/* Makes every reference weak (see the top of the file). */
#define ABI_PRAGMA(text) _Pragma(#text)
#define ABI_WEAK(fn) ABI_PRAGMA(weak nccl##fn) ABI_PRAGMA(weak pnccl##fn)
NCCL_ABI_HEADER_FUNCTIONS(ABI_WEAK)
NCCL_ABI_DEVICE_FUNCTIONS(ABI_WEAK, ABI_WEAK)
#pragma weak ncclResetDebugInitInternal
#undef ABI_WEAK

typedef void (*AnyFunction)(void);
struct Entry {
  const char* name;
  AnyFunction weak;   /* ncclX */
  AnyFunction strong; /* pncclX */
};

#define ABI_ENTRY(fn) {#fn, (AnyFunction)nccl##fn, (AnyFunction)pnccl##fn},
static const struct Entry kEntries[] = {NCCL_ABI_HEADER_FUNCTIONS(ABI_ENTRY)
                                            NCCL_ABI_DEVICE_FUNCTIONS(ABI_ENTRY, ABI_ENTRY)};
#undef ABI_ENTRY

/* A function address as a data pointer, for printing and dladdr (POSIX guarantees they convert). */
static void* asPointer(AnyFunction f) {
  void* p;
  memcpy(&p, &f, sizeof(p));
  return p;
}

/* Which object and symbol the loader resolved an address to; 0 on failure. */
static int resolve(AnyFunction f, char* path, size_t pathLen, const char** symbol) {
  Dl_info info;
  memset(&info, 0, sizeof(info));
  if (dladdr(asPointer(f), &info) == 0 || info.dli_fname == NULL) return 0;
  if (realpath(info.dli_fname, path) == NULL) {
    snprintf(path, pathLen, "%s", info.dli_fname);
  }
  *symbol = info.dli_sname ? info.dli_sname : "?";
  return 1;
}

/* One ncclX/pncclX pair: both resolved, one function, from the expected library. Returns failures. */
static int checkEntry(const struct Entry* e, const char* expected) {
  char path[PATH_MAX];
  const char* sym = NULL;
  int failures = 0;
  if (e->weak == NULL || e->strong == NULL) {
    printf("FAIL: nccl%s or pnccl%s is not exported (%s, %s)\n", e->name, e->name, e->weak ? "found" : "missing",
           e->strong ? "found" : "missing");
    return 1;
  }
  if (e->weak != e->strong) {
    printf("FAIL: nccl%s (%p) and pnccl%s (%p) are not the same function\n", e->name, asPointer(e->weak), e->name,
           asPointer(e->strong));
    ++failures;
  }
  if (!resolve(e->strong, path, sizeof(path), &sym)) {
    printf("FAIL: dladdr cannot place pnccl%s\n", e->name);
    ++failures;
  } else if (strcmp(path, expected) != 0) {
    printf("FAIL: pnccl%s comes from %s, expected %s\n", e->name, path, expected);
    ++failures;
  }
  return failures;
}

/* ncclGetVersion and pncclGetVersion report the version code of the header the program was built with. */
static int checkVersion(void) {
  int failures = 0;
  int version = 0;
  ncclResult_t res = ncclGetVersion(&version);
  printf("ncclGetVersion -> %d (result %d), header NCCL_VERSION_CODE %d\n", version, (int)res, NCCL_VERSION_CODE);
  if (res != ncclSuccess || version != NCCL_VERSION_CODE) {
    printf("FAIL: ncclGetVersion must succeed and return the header's NCCL_VERSION_CODE %d\n", NCCL_VERSION_CODE);
    ++failures;
  }
  version = 0;
  res = pncclGetVersion(&version);
  if (res != ncclSuccess || version != NCCL_VERSION_CODE) {
    printf("FAIL: pncclGetVersion -> %d (result %d), expected %d\n", version, (int)res, NCCL_VERSION_CODE);
    ++failures;
  }
  return failures;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s /path/to/libnccl.so.2 (the library this program must run against)\n", argv[0]);
    return 2;
  }
  char expected[PATH_MAX];
  if (realpath(argv[1], expected) == NULL) {
    fprintf(stderr, "FAIL: cannot resolve %s\n", argv[1]);
    return 1;
  }

  const size_t n = sizeof(kEntries) / sizeof(kEntries[0]);
  int failures = 0;
  for (size_t i = 0; i < n; ++i) failures += checkEntry(&kEntries[i], expected);
  printf("checked %zu functions (%zu ncclX + %zu pncclX symbols) in %s\n", n, n, n, expected);

  /* The one export without a pncclX twin. */
  char path[PATH_MAX];
  const char* sym = NULL;
  if (ncclResetDebugInitInternal == NULL ||
      !resolve((AnyFunction)ncclResetDebugInitInternal, path, sizeof(path), &sym) || strcmp(path, expected) != 0) {
    printf("FAIL: ncclResetDebugInitInternal is not defined by %s\n", expected);
    ++failures;
  } else {
    printf("ncclResetDebugInitInternal: in %s\n", path);
  }

  if (ncclGetVersion != NULL && pncclGetVersion != NULL) failures += checkVersion();
  if (failures != 0) {
    printf("abi_link: %d failure(s)\n", failures);
    return 1;
  }
  printf("abi_link: OK\n");
  return 0;
}
