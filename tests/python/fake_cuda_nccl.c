// A stand-in for libcudart and libnccl.so.2 on host memory, so that the sanity AllReduce of
// `python -m braid_nccl --check` runs its ctypes calls on a machine without a GPU. It computes the
// sum for real. FAKE_GPUS sets the device count (default 2); FAKE_NCCL_CORRUPT=1 makes one element
// of rank 1's result wrong; FAKE_NCCL_INIT_FAIL=1 makes ncclCommInitAll fail.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cudaGetDeviceCount(int* n) {
  const char* e = getenv("FAKE_GPUS");
  *n = e ? atoi(e) : 2;
  return 0;
}
EXPORT int cudaSetDevice(int d) { return d >= 0 ? 0 : 101; }
EXPORT int cudaMalloc(void** p, size_t n) {
  *p = malloc(n);
  return *p ? 0 : 2;
}
EXPORT int cudaFree(void* p) {
  free(p);
  return 0;
}
EXPORT int cudaMemcpy(void* dst, const void* src, size_t n, int kind) {
  memcpy(dst, src, n);
  return kind == 1 || kind == 2 ? 0 : 1;
}
EXPORT int cudaMemset(void* p, int v, size_t n) {
  memset(p, v, n);
  return 0;
}
EXPORT int cudaStreamCreate(void** s) {
  *s = malloc(1);
  return 0;
}
EXPORT int cudaStreamDestroy(void* s) {
  free(s);
  return 0;
}
EXPORT int cudaStreamSynchronize(void* s) { return s ? 0 : 400; }
EXPORT const char* cudaGetErrorString(int e) { return "fake CUDA error"; }

enum { kMaxRanks = 8, kInvalidArgument = 4, kInProgress = 7 };
static struct {
  const float* send;
  float* recv;
  size_t count;
} ops[kMaxRanks];
static int numOps;

EXPORT int ncclGetVersion(int* v) {
  *v = 22809;
  return 0;
}
EXPORT const char* ncclGetErrorString(int r) { return "fake NCCL error"; }
EXPORT const char* ncclGetLastError(void* comm) { return "fake last error"; }
EXPORT int ncclCommInitAll(void** comms, int n, const int* devs) {
  if (getenv("FAKE_NCCL_INIT_FAIL") || n < 1 || n > kMaxRanks) return kInvalidArgument;
  for (int i = 0; i < n; ++i) comms[i] = (void*)(intptr_t)(devs[i] + 1);
  return 0;
}
EXPORT int ncclCommDestroy(void* comm) { return comm ? 0 : kInvalidArgument; }
EXPORT int ncclGroupStart(void) {
  numOps = 0;
  return 0;
}
EXPORT int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, void* comm, void* stream) {
  if (type != 7 || op != 0 || comm == NULL || stream == NULL || numOps == kMaxRanks) return kInvalidArgument;
  ops[numOps].send = (const float*)send;
  ops[numOps].recv = (float*)recv;
  ops[numOps].count = count;
  ++numOps;
  return 0;
}
EXPORT int ncclGroupEnd(void) {
  for (size_t i = 0; numOps > 0 && i < ops[0].count; ++i) {
    float sum = 0;
    for (int r = 0; r < numOps; ++r) sum += ops[r].send[i];
    for (int r = 0; r < numOps; ++r) ops[r].recv[i] = sum;
  }
  if (getenv("FAKE_NCCL_CORRUPT") && numOps > 1) ops[1].recv[5] += 1;
  return kInProgress;  // as a launch that connects first returns: the caller polls
}
EXPORT int ncclCommGetAsyncError(void* comm, int* state) {
  *state = 0;
  return 0;
}
