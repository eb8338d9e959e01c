// Every collective and a send/receive ring on a communicator, each with per-rank, per-operation
// inputs and checked exactly: what a test runs on a communicator it has just changed (grown,
// resumed) to show that the change left every path working.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpu_test_util.h"

namespace gputest {
namespace every_collective {

// Element i of rank r's input for a collective numbered `op`: different per rank, op and element.
inline int32_t valueOf(int op, int rank, size_t i) {
  uint32_t x = static_cast<uint32_t>(op * 1000003 + rank * 7919 + static_cast<int>(i) * 31 + 17);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  return static_cast<int32_t>(x >> 8);  // small enough that sums over 8 ranks do not overflow
}

struct Buffers {
  int32_t* send = nullptr;
  int32_t* recv = nullptr;
  std::vector<int32_t> host;
  size_t elems = 0;
};

inline int upload(Buffers* b, int op, int rank, size_t n) {
  std::vector<int32_t> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = valueOf(op, rank, i);
  CHILD_CUDA(gputest::uploadSync(b->send, in.data(), n * sizeof(int32_t)));
  CHILD_CUDA(gputest::poisonSync(b->recv, 0xa5, b->elems * sizeof(int32_t)));
  return 0;
}

inline int download(Buffers* b, cudaStream_t s, size_t n) {
  CHILD_CUDA(cudaStreamSynchronize(s));
  b->host.resize(n);
  CHILD_CUDA(cudaMemcpy(b->host.data(), b->recv, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  return 0;
}

}  // namespace every_collective

// Every collective and a send/receive ring on `comm` (n ranks, this one `rank`), checked exactly.
// `seed` varies the inputs between calls.
inline int runEveryCollective(ncclComm_t comm, int n, int rank, int seed = 0) {
  using namespace every_collective;
  const int base = seed * 16;
  const size_t count = 1000 + 3;  // odd, and more than one line of every protocol
  Buffers b;
  b.elems = count * n;
  CHILD_CUDA(cudaMalloc(&b.send, b.elems * sizeof(int32_t)));
  CHILD_CUDA(cudaMalloc(&b.recv, b.elems * sizeof(int32_t)));
  cudaStream_t s;
  CHILD_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int root = n - 1;  // a joined rank

  if (upload(&b, base + 1, rank, count) != 0) return 1;
  CHILD_NCCL(ncclAllReduce(b.send, b.recv, count, ncclInt32, ncclSum, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += valueOf(base + 1, r, i);
    CHILD_EXPECT(b.host[i] == static_cast<int32_t>(sum));
  }

  if (upload(&b, base + 2, rank, count) != 0) return 1;
  CHILD_NCCL(ncclBroadcast(b.send, b.recv, count, ncclInt32, root, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[i] == valueOf(base + 2, root, i));

  if (upload(&b, base + 3, rank, count) != 0) return 1;
  CHILD_NCCL(ncclReduce(b.send, b.recv, count, ncclInt32, ncclMax, root, comm, s));
  if (download(&b, s, count) != 0) return 1;
  if (rank == root) {
    for (size_t i = 0; i < count; ++i) {
      int32_t m = valueOf(base + 3, 0, i);
      for (int r = 1; r < n; ++r) m = std::max(m, valueOf(base + 3, r, i));
      CHILD_EXPECT(b.host[i] == m);
    }
  }

  if (upload(&b, base + 4, rank, count) != 0) return 1;
  CHILD_NCCL(ncclAllGather(b.send, b.recv, count, ncclInt32, comm, s));
  if (download(&b, s, count * n) != 0) return 1;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[r * count + i] == valueOf(base + 4, r, i));
  }

  if (upload(&b, base + 5, rank, count * n) != 0) return 1;
  CHILD_NCCL(ncclReduceScatter(b.send, b.recv, count, ncclInt32, ncclSum, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += valueOf(base + 5, r, rank * count + i);
    CHILD_EXPECT(b.host[i] == static_cast<int32_t>(sum));
  }

  if (upload(&b, base + 6, rank, count * n) != 0) return 1;
  CHILD_NCCL(ncclAlltoAll(b.send, b.recv, count, ncclInt32, comm, s));
  if (download(&b, s, count * n) != 0) return 1;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[r * count + i] == valueOf(base + 6, r, rank * count + i));
  }

  if (upload(&b, base + 7, rank, count) != 0) return 1;
  CHILD_NCCL(ncclGather(b.send, b.recv, count, ncclInt32, root, comm, s));
  if (download(&b, s, count * n) != 0) return 1;
  if (rank == root) {
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[r * count + i] == valueOf(base + 7, r, i));
    }
  }

  if (upload(&b, base + 8, rank, count * n) != 0) return 1;
  CHILD_NCCL(ncclScatter(b.send, b.recv, count, ncclInt32, 0, comm, s));
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[i] == valueOf(base + 8, 0, rank * count + i));

  // A ring: everyone sends to the next rank and receives from the previous one.
  if (upload(&b, base + 9, rank, count) != 0) return 1;
  CHILD_NCCL(ncclGroupStart());
  CHILD_NCCL(ncclSend(b.send, count, ncclInt32, (rank + 1) % n, comm, s));
  CHILD_NCCL(ncclRecv(b.recv, count, ncclInt32, (rank + n - 1) % n, comm, s));
  CHILD_NCCL(ncclGroupEnd());
  if (download(&b, s, count) != 0) return 1;
  for (size_t i = 0; i < count; ++i) CHILD_EXPECT(b.host[i] == valueOf(base + 9, (rank + n - 1) % n, i));

  CHILD_CUDA(cudaStreamDestroy(s));
  CHILD_CUDA(cudaFree(b.send));
  CHILD_CUDA(cudaFree(b.recv));
  return 0;
}

}  // namespace gputest
