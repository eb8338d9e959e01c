// transport/suspend.h without a GPU: ranks as threads over an in-memory bootstrap, blocks that
// record what is done to them. A remade block's descriptor (a pipe carrying the owner's address)
// must reach the mapping of exactly that block, after its owner remade it; a block a peer thread
// owns gets its access again only after the owner remade it; suspension lets the mapped blocks go
// before our own, keeping the counters' bytes; a cudaMalloc block makes suspension impossible.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "transport/memory.h"
#include "transport/suspend.h"
#include "transport/transport.h"
#include "util/pid_space.h"

namespace braid::transport {
namespace {

// Tagged messages between ranks of one process.
class Mailbox {
 public:
  void put(int from, int to, int tag, const void* data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const char* p = static_cast<const char*>(data);
    boxes_[{from, to, tag}].emplace_back(p, p + bytes);
    cv_.notify_all();
  }
  bool take(int from, int to, int tag, void* data, size_t bytes) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto& box = boxes_[{from, to, tag}];
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !box.empty(); })) return false;
    if (box.front().size() != bytes) return false;
    std::memcpy(data, box.front().data(), bytes);
    box.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> boxes_;
};

class MemoryBootstrap final : public Bootstrap {
 public:
  MemoryBootstrap(Mailbox* box, int rank, int nranks) : Bootstrap(rank, nranks), box_(box) {}
  ncclResult_t allGather(void*, size_t) override { return ncclInternalError; }
  ncclResult_t barrier() override { return ncclInternalError; }
  ncclResult_t broadcast(void*, size_t, int) override { return ncclInternalError; }
  ncclResult_t send(int peer, int tag, const void* data, size_t bytes) override {
    box_->put(rank(), peer, tag, data, bytes);
    return ncclSuccess;
  }
  ncclResult_t recv(int peer, int tag, void* data, size_t bytes) override {
    return box_->take(peer, rank(), tag, data, bytes) ? ncclSuccess : ncclInternalError;
  }

 private:
  Mailbox* box_;
};

// A block of one of the kinds transport/memory.h names. An own exported block's descriptor is a
// pipe holding its address; a mapped block reads the address back when it resumes.
class RecordingBlock final : public Block {
 public:
  RecordingBlock(Suspension kind, uintptr_t address, bool exported, const std::atomic<int>* ownerRemade = nullptr)
      : kind_(kind), exported_(exported), ownerRemade_(ownerRemade) {
    devPtr_ = reinterpret_cast<char*>(address);
    bytes_ = 2 << 20;
  }
  Suspension suspension() const override { return kind_; }
  bool exported() const override { return exported_; }
  ncclResult_t exportFd(UniqueFd* out) const override {
    int fds[2];
    if (pipe(fds) != 0) return ncclSystemError;
    const uintptr_t address = reinterpret_cast<uintptr_t>(devPtr_);
    if (write(fds[1], &address, sizeof(address)) != sizeof(address)) return ncclSystemError;
    close(fds[1]);
    out->reset(fds[0]);
    return ncclSuccess;
  }
  ncclResult_t suspend(size_t keepBytes) override {
    suspendedWith = static_cast<int64_t>(keepBytes);
    suspendOrder = counter_.fetch_add(1);
    return ncclSuccess;
  }
  ncclResult_t resume(UniqueFd fd) override {
    if (ownerRemade_ != nullptr) ownerWasRemade = ownerRemade_->load() != 0;
    if (kind_ == Suspension::kImported) {
      if (!fd.valid() || read(fd.get(), &receivedAddress, sizeof(receivedAddress)) != sizeof(receivedAddress)) {
        return ncclSystemError;
      }
    }
    if (kind_ == Suspension::kOwn) remade.store(1);
    resumes++;
    return ncclSuccess;
  }

  std::atomic<int> remade{0};
  int resumes = 0;
  bool ownerWasRemade = false;
  uintptr_t receivedAddress = 0;
  int64_t suspendedWith = -1;
  int suspendOrder = -1;

 private:
  static std::atomic<int> counter_;
  Suspension kind_;
  bool exported_;
  const std::atomic<int>* ownerRemade_;
};
std::atomic<int> RecordingBlock::counter_{0};

class FakeConnections final : public Connections {
 public:
  const std::vector<BlockRecord>& blocks() const override { return records; }
  std::vector<BlockRecord> records;
};

// The k-th own block of `owner` shared with `peer` (two per pair, as a send and a receive block
// are): a distinct address each.
uintptr_t addressOf(int owner, int peer, int k) { return 0x10000000u * (owner + 1) + 0x100000u * peer + 0x1000u * k; }
constexpr int kBlocksPerPair = 2;

// n ranks, every pair with two own blocks each way and the peer's mapped: across processes
// (kImported) or between threads (kGranted).
struct Job {
  Job(int nranks, Suspension mapped) : n(nranks), conns(nranks) {
    for (int r = 0; r < n; ++r) {
      for (int p = 0; p < n; ++p) {
        for (int k = 0; p != r && k < kBlocksPerPair; ++k) {
          own[key(r, p, k)] =
              std::make_unique<RecordingBlock>(Suspension::kOwn, addressOf(r, p, k), mapped == Suspension::kImported);
          conns[r].records.push_back(BlockRecord{own[key(r, p, k)].get(), true, p, 256, addressOf(r, p, k)});
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      for (int p = 0; p < n; ++p) {
        // Mapped in the opposite order of the owner's sends: matching must go by address, not by order.
        for (int k = kBlocksPerPair - 1; p != r && k >= 0; --k) {
          RecordingBlock* theirs = own[key(p, r, k)].get();
          peers[key(r, p, k)] = std::make_unique<RecordingBlock>(mapped, addressOf(p, r, k), false, &theirs->remade);
          conns[r].records.push_back(BlockRecord{peers[key(r, p, k)].get(), false, p, 0, addressOf(p, r, k)});
        }
      }
    }
  }
  static std::tuple<int, int, int> key(int a, int b, int k) { return {a, b, k}; }

  // Every rank is a thread of this process: the senders each rank's socket accepts.
  std::vector<RankPlace> jobPeers() const {
    const RankPlace self{0, 0, 0, 0x5, 0x10, static_cast<int32_t>(::getpid()), localPidSpace()};
    return std::vector<RankPlace>(n, self);
  }

  // Every rank resumes at once; the results of each.
  std::vector<ncclResult_t> resumeAll() {
    Mailbox box;
    std::vector<ncclResult_t> results(n, ncclInternalError);
    std::vector<std::thread> threads;
    std::atomic<int> abortFlag{0};
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        MemoryBootstrap bootstrap(&box, r, n);
        SuspendContext ctx{r, r, 0xabcdefull + 17, &bootstrap, &abortFlag, jobPeers()};
        results[r] = resumeConnections(ctx, {&conns[r]});
      });
    }
    for (std::thread& t : threads) t.join();
    return results;
  }

  int n;
  std::map<std::tuple<int, int, int>, std::unique_ptr<RecordingBlock>> own;    // (owner, peer, k)
  std::map<std::tuple<int, int, int>, std::unique_ptr<RecordingBlock>> peers;  // (mapper, owner, k)
  std::vector<FakeConnections> conns;
};

TEST(TransportSuspend, EveryMappedBlockGetsItsOwnersNewDescriptorAfterTheOwnerRemadeIt) {
  Job job(3, Suspension::kImported);
  for (ncclResult_t r : job.resumeAll()) EXPECT_EQ(r, ncclSuccess);
  for (const auto& [key, block] : job.own) EXPECT_EQ(block->resumes, 1);
  for (const auto& [key, mapped] : job.peers) {
    const auto [r, p, k] = key;
    EXPECT_EQ(mapped->resumes, 1);
    EXPECT_EQ(mapped->receivedAddress, addressOf(p, r, k)) << "rank " << r << " mapping rank " << p << "'s block " << k;
    EXPECT_TRUE(mapped->ownerWasRemade);
  }
}

TEST(TransportSuspend, APeerThreadsBlockGetsAccessAgainAfterTheOwnerRemadeIt) {
  Job job(4, Suspension::kGranted);
  for (ncclResult_t r : job.resumeAll()) EXPECT_EQ(r, ncclSuccess);
  for (const auto& [key, mapped] : job.peers) {
    EXPECT_EQ(mapped->resumes, 1);
    EXPECT_TRUE(mapped->ownerWasRemade);
  }
}

TEST(TransportSuspend, MappedBlocksGoBeforeOwnOnesWhichKeepTheirCounters) {
  Job job(2, Suspension::kImported);
  ASSERT_EQ(suspendConnections({&job.conns[0]}), ncclSuccess);
  const RecordingBlock& own = *job.own[Job::key(0, 1, 0)];
  const RecordingBlock& mapped = *job.peers[Job::key(0, 1, 0)];
  EXPECT_EQ(own.suspendedWith, 256);
  EXPECT_EQ(mapped.suspendedWith, 0);
  EXPECT_LT(mapped.suspendOrder, own.suspendOrder);
}

TEST(TransportSuspend, CudaMallocBlocksCannotBeSuspendedAndCountAsPersistent) {
  RecordingBlock own(Suspension::kOwn, 0x1000, false);
  RecordingBlock plain(Suspension::kCannot, 0x2000, false);
  RecordingBlock host(Suspension::kStays, 0x3000, false);
  FakeConnections conns;
  conns.records = {{&own, true, 1, 128, 0x1000}, {&host, true, 2, 128, 0x3000}};
  std::string why;
  EXPECT_TRUE(connectionsSuspendable({&conns}, &why));
  conns.records.push_back({&plain, true, 3, 128, 0x2000});
  EXPECT_FALSE(connectionsSuspendable({&conns}, &why));
  EXPECT_NE(why.find("rank 3"), std::string::npos) << why;
  const BlockBytes bytes = ownDeviceBytes({&conns});
  EXPECT_EQ(bytes.suspendable, own.bytes());
  EXPECT_EQ(bytes.persistent, plain.bytes());
}

}  // namespace
}  // namespace braid::transport
