// The communicator's table of registered windows in device memory, which device code searches to
// find the window holding a pointer (ncclFindWindow): blocks of 32 (base, size, window) entries
// chained through `next`, an entry with zero fields unused, in the layout of NCCL's
// ncclDevCommWindowTable. Every device communicator points to its first block, so the table exists
// for as long as the communicator's windows do, and later registrations show up in device
// communicators made before them.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

namespace braid::window {

class WindowTable {
 public:
  WindowTable() = default;
  ~WindowTable();
  WindowTable(const WindowTable&) = delete;
  WindowTable& operator=(const WindowTable&) = delete;

  // The first block (allocated at the first call), for ncclDevComm::windowTable.
  [[nodiscard]] ncclResult_t head(cudaStream_t stream, void** out);
  // Enters `window` for the bytes [base, base + size) in the first free entry, adding a block when
  // all are taken. The writes are complete on return.
  [[nodiscard]] ncclResult_t add(uintptr_t base, uint64_t size, const void* window, cudaStream_t stream);
  // Clears the entry of `window`, if there is one.
  [[nodiscard]] ncclResult_t remove(const void* window, cudaStream_t stream);

  struct Entry {
    uintptr_t base;
    uint64_t size;
    const void* window;
  };
  static constexpr int kEntriesPerBlock = 32;
  struct Block {
    Entry entries[kEntriesPerBlock];
    uintptr_t next;  // the device address of the next block, or 0
  };

 private:
  [[nodiscard]] ncclResult_t addBlock(cudaStream_t stream);
  [[nodiscard]] ncclResult_t writeEntry(size_t block, int index, cudaStream_t stream);

  std::vector<Block*> device_;  // the blocks, in chain order
  std::vector<Block> mirror_;   // what each holds
};

static_assert(sizeof(WindowTable::Block) == 776, "NCCL's ncclDevCommWindowTable: 32 entries of 24 bytes, then next");

}  // namespace braid::window
