/*
 * abi_link -- links a plain C program against libnccl.so.2 through every function of nccl.h, both
 * ncclX and pncclX, plus the two device-API host functions (ncclDevCommCreate/Destroy), so the
 * build fails if one is not exported. At run time it checks that each ncclX and its pncclX are the
 * same function in the library given as argv[1] (so the test runs against Braid, not whatever
 * libnccl the loader might find), and that ncclGetVersion returns the header's version code.
 * Nothing here needs a GPU.
 */
#define _GNU_SOURCE /* dladdr */
#ifndef ABI_NCCL_H
#error "build with -DABI_NCCL_H=\"/path/to/nccl.h\""
#endif
#include ABI_NCCL_H

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

/* The device-API functions live in nccl_device/host.h (or in no header). Only their addresses are
 * taken here, so each is declared with a placeholder type rather than through that header. */
#define ABI_DECLARE(fn) \
  void nccl##fn(void);  \
  void pnccl##fn(void);
NCCL_ABI_DEVICE_FUNCTIONS(ABI_DECLARE)
#undef ABI_DECLARE

typedef void (*AnyFunction)(void);
struct Entry {
  const char* name;
  AnyFunction weak;   /* ncclX */
  AnyFunction strong; /* pncclX */
};

#define ABI_ENTRY(fn) {#fn, (AnyFunction)nccl##fn, (AnyFunction)pnccl##fn},
static const struct Entry kEntries[] = {NCCL_ABI_HEADER_FUNCTIONS(ABI_ENTRY) NCCL_ABI_DEVICE_FUNCTIONS(ABI_ENTRY)};
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
  for (size_t i = 0; i < n; ++i) {
    const struct Entry* e = &kEntries[i];
    char path[PATH_MAX];
    const char* sym = NULL;
    if (e->weak == NULL || e->strong == NULL) {
      printf("FAIL: nccl%s or pnccl%s resolved to NULL\n", e->name, e->name);
      ++failures;
      continue;
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
  }
  printf("checked %zu functions (%zu ncclX + %zu pncclX symbols) in %s\n", n, n, n, expected);

  int version = 0;
  ncclResult_t res = ncclGetVersion(&version);
  printf("ncclGetVersion -> %d (result %d), header NCCL_VERSION_CODE %d\n", version, (int)res, NCCL_VERSION_CODE);
  if (res != ncclSuccess || version != 22809 || version != NCCL_VERSION_CODE) {
    printf("FAIL: ncclGetVersion must succeed and return 22809\n");
    ++failures;
  }
  version = 0;
  res = pncclGetVersion(&version);
  if (res != ncclSuccess || version != 22809) {
    printf("FAIL: pncclGetVersion -> %d (result %d), expected 22809\n", version, (int)res);
    ++failures;
  }

  if (failures != 0) {
    printf("abi_link: %d failure(s)\n", failures);
    return 1;
  }
  printf("abi_link: OK\n");
  return 0;
}
