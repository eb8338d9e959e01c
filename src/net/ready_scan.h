// Which receiving sockets have something to read, learned for a whole sweep of a proxy thread in
// one epoll_wait instead of one recv() per socket.
//
// A proxy tests every posted receive of every connection in turn, and an idle connection's test is
// a recv() that returns EAGAIN: with a dozen receive FIFOs (rings and trees across hosts) those
// calls made a NET hop 6.7 us slower over loopback (tests/unit/proxy_latency_test.cc). A
// ReadyScan holds the receiving sockets of the connections its thread progresses in one epoll set
// (level-triggered, so unread data, a closed peer and an error all report). A connection asks
// mayRead() before it reads; the scan is refreshed (one epoll_wait with no timeout) when a
// connection asks a second time since the last refresh, which is once per sweep of the proxy
// however many connections it has. Data that lands just after a refresh waits at most one sweep.
//
// One per thread (threadLocal()); a connection is registered with the scan of the first thread
// that asks and progressed without it (mayRead() true) from any other. Closing a socket removes it
// from the epoll set (the kernel does); forget() drops what the scan knew of its fds.
#pragma once

#include <sys/epoll.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braid::net {

class ReadyScan {
 public:
  ReadyScan();
  ~ReadyScan();
  ReadyScan(const ReadyScan&) = delete;
  ReadyScan& operator=(const ReadyScan&) = delete;

  static ReadyScan& threadLocal();

  // Adds the fds of one connection; false when epoll refused them (the caller then always reads).
  bool add(const std::vector<int>& fds);
  void forget(const std::vector<int>& fds);
  // Whether any of the fds may have data; *lastEpoch is the caller's note of the scan it last saw.
  bool mayRead(const std::vector<int>& fds, uint64_t* lastEpoch);
  // Readable while any registered socket has something to read (-1: no epoll): a thread with
  // nothing else to do can wait on it for its connections' data.
  int readyFd() const { return epollFd_; }

 private:
  void refresh();

  int epollFd_ = -1;
  size_t registered_ = 0;  // fds added (an upper bound: closed ones leave the set by themselves)
  uint64_t epoch_ = 1;
  std::vector<uint8_t> ready_;  // by fd
  std::vector<epoll_event> events_;
};

}  // namespace braid::net
