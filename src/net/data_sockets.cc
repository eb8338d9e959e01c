#include "net/data_sockets.h"

#include <poll.h>

#include <algorithm>
#include <chrono>

#include "util/check.h"
#include "util/log.h"
#include "util/thread_guard.h"

namespace braid::net {

ncclResult_t closedMidMessage(const std::string& peer, size_t left, size_t bytes) {
  WARN("net/socket: the connection from %s was closed by the peer with %zu of %zu bytes of a message to come",
       peer.c_str(), left, bytes);
  return ncclRemoteError;
}

struct DataSockets::Helper {
  std::vector<int> lanes;  // indices into lanes_
  std::mutex mutex;
  std::condition_variable wake;
  std::atomic<int> queued{0};  // parts queued on its lanes and not yet taken
  std::vector<pollfd> pollFds;
  std::thread thread;
};

DataSockets::DataSockets(std::vector<Socket> sockets, bool isSend, int nThreads, std::string peer)
    : sockets_(std::move(sockets)), lanes_(sockets_.size()), isSend_(isSend), peer_(std::move(peer)) {
  for (size_t i = 0; i < sockets_.size(); i++) lanes_[i].socket = &sockets_[i];
  const int n = std::min(nThreads, size());
  for (int t = 0; t < n; t++) helpers_.push_back(std::make_unique<Helper>());
  for (int i = 0; i < size() && n > 0; i++) helpers_[i % n]->lanes.push_back(i);
}

DataSockets::~DataSockets() {
  stop_.store(true);
  for (auto& h : helpers_) {
    { std::lock_guard<std::mutex> lock(h->mutex); }  // a helper between its check and its wait sees stop_
    h->wake.notify_all();
    if (h->thread.joinable()) h->thread.join();
  }
}

std::vector<int> DataSockets::callerFds() const {
  std::vector<int> fds;
  if (threaded()) return fds;
  for (const Socket& s : sockets_) fds.push_back(s.fd());
  return fds;
}

void DataSockets::queue(int socket, const Part& part) {
  Lane& lane = lanes_[socket];
  if (!threaded()) {
    lane.queued.push_back(part);
    return;
  }
  Helper& h = *helpers_[socket % static_cast<int>(helpers_.size())];
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    lane.queued.push_back(part);
    h.queued.fetch_add(1);
  }
  h.wake.notify_one();
  if (!h.thread.joinable()) {
    h.thread = std::thread([this, &h] {
      // An exception ends this helper: the connection's next progress() reports it.
      const ncclResult_t result = guardThread("net/socket helper", [&] { run(&h); });
      if (result != ncclSuccess) noteError(result);
    });
  }
}

ncclResult_t DataSockets::advance(Lane* lane, bool* moved) {
  const size_t before = lane->done;
  if (isSend_) {
    NCCLCHECK(lane->socket->sendSome(lane->current.ptr, lane->current.bytes, &lane->done));
  } else {
    bool closed = false;
    NCCLCHECK(lane->socket->recvSome(lane->current.ptr, lane->current.bytes, &lane->done, &closed));
    if (closed && lane->done < lane->current.bytes) {
      return closedMidMessage(peer_, lane->current.bytes - lane->done, lane->current.bytes);
    }
  }
  *moved = lane->done != before;
  if (lane->done == lane->current.bytes) {
    lane->busy = false;
    lane->current.left->fetch_sub(1, std::memory_order_release);
  }
  return ncclSuccess;
}

ncclResult_t DataSockets::progress() {
  if (threaded()) return static_cast<ncclResult_t>(error_.load(std::memory_order_acquire));
  for (Lane& lane : lanes_) {
    bool moved = true;
    while (moved) {
      if (!lane.busy) {
        if (lane.queued.empty()) break;
        lane.current = lane.queued.front();
        lane.queued.pop_front();
        lane.done = 0;
        lane.busy = true;
      }
      NCCLCHECK(advance(&lane, &moved));
    }
  }
  return ncclSuccess;
}

int DataSockets::takeParts(Helper* helper) {
  int busy = 0;
  std::lock_guard<std::mutex> lock(helper->mutex);
  for (int i : helper->lanes) {
    Lane& lane = lanes_[i];
    if (!lane.busy && !lane.queued.empty()) {
      lane.current = lane.queued.front();
      lane.queued.pop_front();
      lane.done = 0;
      lane.busy = true;
      helper->queued.fetch_sub(1);
    }
    busy += lane.busy ? 1 : 0;
  }
  return busy;
}

bool DataSockets::waitForParts(Helper* helper) {
  const auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(kIdleSpinUs);
  while (helper->queued.load() == 0 && !stop_.load(std::memory_order_relaxed) &&
         std::chrono::steady_clock::now() < spinUntil) {
  }
  std::unique_lock<std::mutex> lock(helper->mutex);
  helper->wake.wait(lock, [&] { return stop_.load() || helper->queued.load() > 0; });
  return !stop_.load();
}

void DataSockets::waitOnSockets(Helper* helper) {
  helper->pollFds.clear();
  for (int i : helper->lanes) {
    if (!lanes_[i].busy) continue;
    helper->pollFds.push_back(pollfd{lanes_[i].socket->fd(), static_cast<short>(isSend_ ? POLLOUT : POLLIN), 0});
  }
  (void)poll(helper->pollFds.data(), helper->pollFds.size(), kPollMs);  // EINTR or a timeout: look again
}

void DataSockets::noteError(ncclResult_t error) {
  int expected = ncclSuccess;
  error_.compare_exchange_strong(expected, error, std::memory_order_release);
}

void DataSockets::run(Helper* helper) {
  while (!stop_.load(std::memory_order_relaxed)) {
    if (takeParts(helper) == 0) {
      if (!waitForParts(helper)) return;
      continue;
    }
    bool movedAny = false;
    for (int i : helper->lanes) {
      Lane& lane = lanes_[i];
      if (!lane.busy) continue;
      bool moved = false;
      const ncclResult_t r = advance(&lane, &moved);
      if (r != ncclSuccess) {
        noteError(r);
        return;
      }
      movedAny = movedAny || moved;
    }
    if (!movedAny) waitOnSockets(helper);
  }
}

}  // namespace braid::net
