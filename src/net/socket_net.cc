#include "net/socket_net.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace braid::net {
namespace {

constexpr size_t kHeaderBytes = 2 * sizeof(uint64_t);
// Receive side, control socket: the buffer of one read, and the payload remainder from which a
// receive reads straight into the request instead (a copy through the buffer would cost more than
// the system call it saves).
constexpr size_t kRxBufBytes = 16 << 10;
constexpr size_t kDirectReadBytes = 4 << 10;
// Pieces one sendmsg() takes.
constexpr int kMaxSendPieces = 16;
constexpr std::chrono::milliseconds kConnectTimeout(30000);

uint64_t randomWord() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

bool parseSocketNetHello(const uint8_t* data, size_t size, SocketNetHello* out) {
  if (data == nullptr || size != sizeof(SocketNetHello)) return false;
  std::memcpy(out, data, sizeof(SocketNetHello));
  return out->nSocks >= 1 && out->nSocks <= kSocketNetMaxSocks && out->index <= out->nSocks;
}

int socketNetThreadsPerConn() {
  return static_cast<int>(std::clamp<int64_t>(paramInt(ParamId::kSocketNthreads), 0, kSocketNetMaxThreads));
}

int socketNetSocksPerConn() {
  const int64_t n = std::max(socketNetThreadsPerConn(), 1) * paramInt(ParamId::kNsocksPerthread);
  return static_cast<int>(std::clamp<int64_t>(n, 1, kSocketNetMaxSocks));
}

SocketNetConn::SocketNetConn(Socket ctrl, std::vector<Socket> data, bool isSend, std::string peer)
    : ctrl_(std::move(ctrl)), isSend_(isSend), peer_(std::move(peer)) {
  const int64_t timeoutMs = paramInt(ParamId::kNetSocketTimeoutMs);
  ctrl_.setUnansweredTimeout(timeoutMs);
  for (Socket& s : data) s.setUnansweredTimeout(timeoutMs);
  data_ = std::make_unique<DataSockets>(std::move(data), isSend_, socketNetThreadsPerConn(), peer_);
  if (!isSend_) {
    rxBuf_.resize(kRxBufBytes);
    recvFds_.push_back(ctrl_.fd());
    for (int fd : data_->callerFds()) recvFds_.push_back(fd);
  }
}

bool SocketNetConn::mayRead() {
  ReadyScan& scan = ReadyScan::threadLocal();
  if (scan_ == nullptr && !scanRefused_) {
    if (scan.add(recvFds_)) {
      scan_ = &scan;
    } else {
      scanRefused_ = true;
    }
  }
  if (scan_ != &scan) return true;
  // Buffered bytes wait for a receive to be posted: the socket itself may be empty. So may a TLS
  // record read in part (util/tls.h): the kernel no longer reports its rest.
  if (rxBegin_ < rxEnd_ || ctrl_.hasBufferedInput() || data_->callerHasBufferedInput()) return true;
  return scan.mayRead(recvFds_, &scanEpoch_);
}

SocketNetConn::~SocketNetConn() {
  data_.reset();  // its helpers may still write into the requests
  for (SocketNetRequest* r : requests_) delete r;
}

int SocketNetConn::partsFor(size_t bytes) const {
  const size_t parts = std::max<size_t>(1, bytes / kSocketNetMinPartBytes);
  return static_cast<int>(std::min<size_t>(parts, static_cast<size_t>(data_->size())));
}

// Part i of n covers [bytes * i / n, bytes * (i + 1) / n): both ends compute it from the size.
void SocketNetConn::queuePayload(SocketNetRequest* req) {
  if (req->size == 0) return;
  if (req->size <= kSocketNetInlineBytes) {
    ctrlJobs_.push_back(Job{req, req->data, req->size, 0});
    req->jobsLeft++;
    return;
  }
  const int n = partsFor(req->size);
  for (int i = 0; i < n; i++) {
    const size_t begin = req->size * i / n;
    const size_t end = req->size * (i + 1) / n;
    req->jobsLeft++;
    data_->queue(i, DataSockets::Part{&req->jobsLeft, req->data + begin, end - begin});
  }
}

ncclResult_t SocketNetConn::post(bool isSend, void* data, size_t bytes, int tag, SocketNetRequest** out) {
  *out = nullptr;
  if (error_ != ncclSuccess) return error_;
  if (isSend != isSend_) {
    WARN("net/socket: a %s posted on the %s end of the connection to %s", isSend ? "send" : "receive",
         isSend_ ? "sending" : "receiving", peer_.c_str());
    return ncclInternalError;
  }
  auto req = std::make_unique<SocketNetRequest>();
  req->isSend = isSend;
  req->data = static_cast<char*>(data);
  req->capacity = bytes;
  req->tag = tag;
  if (isSend) {
    req->size = bytes;
    req->header[0] = bytes;
    req->header[1] = static_cast<uint64_t>(static_cast<uint32_t>(tag));
    req->headerDone = true;
    ctrlJobs_.push_back(Job{req.get(), reinterpret_cast<char*>(req->header), kHeaderBytes, 0});
    req->jobsLeft = 1;
    queuePayload(req.get());
  }
  requests_.push_back(req.get());
  *out = req.release();
  return ncclSuccess;
}

void SocketNetConn::fail(ncclResult_t error) {
  if (error_ == ncclSuccess) error_ = error;
  for (SocketNetRequest* r : requests_) r->error = error_;
}

// Send side: the control socket's queued pieces (headers, inline payloads), several per sendmsg(),
// until it would block.
ncclResult_t SocketNetConn::progressSendCtrl() {
  std::deque<Job>* jobs = &ctrlJobs_;
  while (!jobs->empty()) {
    iovec iov[kMaxSendPieces];
    int n = 0;
    size_t want = 0;
    for (auto it = jobs->begin(); it != jobs->end() && n < kMaxSendPieces; ++it, ++n) {
      iov[n].iov_base = it->ptr + it->done;
      iov[n].iov_len = it->bytes - it->done;
      want += iov[n].iov_len;
    }
    size_t sent = 0;
    NCCLCHECK(ctrl_.sendSomeV(iov, n, &sent));
    for (size_t left = sent; left > 0;) {
      Job& job = jobs->front();
      const size_t take = std::min(left, job.bytes - job.done);
      job.done += take;
      left -= take;
      if (job.done == job.bytes) {
        job.req->jobsLeft--;
        jobs->pop_front();
      }
    }
    if (sent < want) return ncclSuccess;  // would block
  }
  return ncclSuccess;
}

// Fills the control socket's job from rxBuf_, reading the socket once when the buffer is empty; a
// large payload remainder is read straight into the request.
ncclResult_t SocketNetConn::readCtrl(Job* job, bool* closed) {
  while (job->done < job->bytes) {
    if (rxBegin_ < rxEnd_) {
      const size_t take = std::min(job->bytes - job->done, rxEnd_ - rxBegin_);
      std::memcpy(job->ptr + job->done, rxBuf_.data() + rxBegin_, take);
      job->done += take;
      rxBegin_ += take;
      continue;
    }
    if (job->bytes - job->done >= kDirectReadBytes) return ctrl_.recvSome(job->ptr, job->bytes, &job->done, closed);
    if (rxDrained_) return ncclSuccess;
    size_t got = 0;
    NCCLCHECK(ctrl_.recvOnce(rxBuf_.data(), rxBuf_.size(), &got, closed));
    rxBegin_ = 0;
    rxEnd_ = got;
    rxDrained_ = got < rxBuf_.size();
    if (got == 0) return ncclSuccess;
  }
  return ncclSuccess;
}

// Receive side: the control socket's front jobs until it would block. A receive's header, once
// complete, queues its payload (inline: on the control socket; else on the data sockets).
ncclResult_t SocketNetConn::progressRecvCtrl() {
  std::deque<Job>* jobs = &ctrlJobs_;
  for (;;) {
    queueNextHeader();
    if (jobs->empty()) return ncclSuccess;
    Job& job = jobs->front();
    bool closed = false;
    NCCLCHECK(readCtrl(&job, &closed));
    const bool atBoundary = job.done == 0 && job.ptr == reinterpret_cast<char*>(job.req->header);
    if (closed && atBoundary) {
      peerClosed_ = true;  // maybe in order, after its last message: test() decides
      return ncclSuccess;
    }
    if (closed && job.done < job.bytes) return closedMidMessage(peer_, job.bytes - job.done, job.bytes);
    if (job.done < job.bytes) return ncclSuccess;  // would block
    SocketNetRequest* req = job.req;
    const bool isHeader = job.ptr == reinterpret_cast<char*>(req->header);
    jobs->pop_front();
    req->jobsLeft--;
    if (!isHeader) continue;
    req->headerDone = true;
    req->size = req->header[0];
    if (req->size > req->capacity) {
      WARN("net/socket: %s sent a message of %zu bytes (tag %d) into a receive of %zu bytes", peer_.c_str(), req->size,
           static_cast<int>(static_cast<uint32_t>(req->header[1])), req->capacity);
      return ncclInvalidUsage;
    }
    queuePayload(req);
    nextHeader_++;
  }
}

// Receive side: the control socket reads the next receive's header once it has nothing else to
// read (an inline payload comes before the next header).
void SocketNetConn::queueNextHeader() {
  if (isSend_ || !ctrlJobs_.empty() || nextHeader_ >= requests_.size()) return;
  SocketNetRequest* req = requests_[nextHeader_];
  ctrlJobs_.push_back(Job{req, reinterpret_cast<char*>(req->header), kHeaderBytes, 0});
  req->jobsLeft++;
}

ncclResult_t SocketNetConn::progress() {
  if (error_ != ncclSuccess) return error_;
  if (peerClosed_) return data_->progress();  // nothing more comes on the control socket
  if (!isSend_ && !mayRead()) return ncclSuccess;
  rxDrained_ = false;
  ncclResult_t r = isSend_ ? progressSendCtrl() : progressRecvCtrl();
  if (r == ncclSuccess) r = data_->progress();
  if (r != ncclSuccess) fail(r);
  return r;
}

ncclResult_t SocketNetConn::test(SocketNetRequest* req, bool* done, size_t* size) {
  *done = false;
  const auto it = std::find(requests_.begin(), requests_.end(), req);
  if (it == requests_.end()) {
    WARN("net/socket: test() of a request that is not pending on the connection to %s", peer_.c_str());
    return ncclInternalError;
  }
  const ncclResult_t r = progress();
  if (r != ncclSuccess) return r;
  if (!req->headerDone && peerClosed_) {
    WARN("net/socket: %s closed the connection while a receive waited for its next message", peer_.c_str());
    fail(ncclRemoteError);
    return ncclRemoteError;
  }
  if (req->jobsLeft.load(std::memory_order_acquire) > 0 || !req->headerDone) return ncclSuccess;
  *done = true;
  if (size != nullptr) *size = req->size;
  // A finished receive has its header, so it sits before nextHeader_.
  if (!isSend_) nextHeader_--;
  requests_.erase(it);
  delete req;
  return ncclSuccess;
}

ncclResult_t SocketNetListener::listen(const SocketAddress& local, SocketNetHandle* handle,
                                       std::unique_ptr<SocketNetListener>* out) {
  const uint64_t magic = randomWord();
  Socket listener;
  NCCLCHECK(Socket::listen(local, magic, SocketType::kNetSocket, &listener));
  *handle = SocketNetHandle{};
  handle->magic = magic;
  handle->addr = listener.localAddress();
  auto l = std::make_unique<SocketNetListener>();
  l->acceptor_ = SocketAcceptor(std::move(listener), sizeof(SocketNetHello));
  *out = std::move(l);
  return ncclSuccess;
}

void SocketNetListener::dropOldestPartial() {
  auto oldest = std::min_element(partial_.begin(), partial_.end(),
                                 [](const auto& a, const auto& b) { return a.second.order < b.second.order; });
  if (oldest == partial_.end()) return;
  INFO(kLogNet, "net/socket: dropped an incomplete connection (%d of %zu sockets) to make room: more than %zu are open",
       oldest->second.arrived, oldest->second.sockets.size(), kMaxPartial);
  partial_.erase(oldest);
}

ncclResult_t SocketNetListener::accept(std::unique_ptr<SocketNetConn>* out) {
  out->reset();
  NCCLCHECK(acceptor_.progress());
  AcceptedConnection c;
  while (acceptor_.takeReady(&c)) {
    SocketNetHello hello{};
    if (!parseSocketNetHello(reinterpret_cast<const uint8_t*>(c.hello.data()), c.hello.size(), &hello)) {
      INFO(kLogNet, "net/socket: dropped a connection from %s with a bad hello (socket %u of %u)",
           socketAddressToString(c.socket.peerAddress()).c_str(), hello.index, hello.nSocks);
      continue;
    }
    if (partial_.count(hello.connId) == 0 && partial_.size() >= kMaxPartial) dropOldestPartial();
    Partial& p = partial_[hello.connId];
    if (p.sockets.empty()) {
      p.sockets.resize(hello.nSocks + 1);
      p.order = nextOrder_++;
    }
    if (p.sockets.size() != hello.nSocks + 1 || p.sockets[hello.index].valid()) continue;  // inconsistent: ignore
    p.sockets[hello.index] = std::move(c.socket);
    if (++p.arrived < static_cast<int>(p.sockets.size())) continue;
    std::vector<Socket> sockets = std::move(p.sockets);
    partial_.erase(hello.connId);
    const std::string peer = "net peer " + socketAddressToString(sockets[0].peerAddress());
    Socket ctrl = std::move(sockets[0]);
    sockets.erase(sockets.begin());
    *out = std::make_unique<SocketNetConn>(std::move(ctrl), std::move(sockets), false, peer);
    return ncclSuccess;  // one per call; the rest stay queued in the acceptor
  }
  return ncclSuccess;
}

ncclResult_t SocketNetConnecting::start(const SocketNetHandle& handle, int nSocks,
                                        std::unique_ptr<SocketNetConnecting>* out) {
  nSocks = std::clamp(nSocks, 1, kSocketNetMaxSocks);
  auto c = std::make_unique<SocketNetConnecting>();
  c->connId_ = randomWord();
  c->peer_ = "net peer " + socketAddressToString(handle.addr);
  c->deadline_ = Deadline::after(kConnectTimeout);
  c->connectors_.resize(static_cast<size_t>(nSocks) + 1);
  for (SocketConnector& connector : c->connectors_) {
    NCCLCHECK(SocketConnector::start(handle.addr, handle.magic, SocketType::kNetSocket, c->peer_, false, c->deadline_,
                                     &connector));
  }
  *out = std::move(c);
  return ncclSuccess;
}

ncclResult_t SocketNetConnecting::progress(std::unique_ptr<SocketNetConn>* out) {
  out->reset();
  if (connectors_.empty()) {  // the connection went to the caller already
    WARN("net/socket: the connection to %s was already made and handed over", peer_.c_str());
    return ncclInternalError;
  }
  bool all = true;
  for (SocketConnector& connector : connectors_) {
    bool done = false;
    NCCLCHECK(connector.progress(&done));
    all = all && done;
  }
  if (!all) {
    if (deadline_.expired()) {
      WARN("net/socket: %s did not complete the connection handshake within %.3g s", peer_.c_str(),
           deadline_.timeoutSeconds());
      return ncclRemoteError;
    }
    return ncclSuccess;
  }
  const uint32_t nSocks = static_cast<uint32_t>(connectors_.size() - 1);
  std::vector<Socket> sockets;
  for (uint32_t i = 0; i <= nSocks; i++) {
    const SocketNetHello hello{connId_, i, nSocks};
    NCCLCHECK(connectors_[i].socket().sendAll(&hello, sizeof(hello), deadline_));
    sockets.push_back(std::move(connectors_[i].socket()));
  }
  connectors_.clear();
  Socket ctrl = std::move(sockets[0]);
  sockets.erase(sockets.begin());
  *out = std::make_unique<SocketNetConn>(std::move(ctrl), std::move(sockets), true, peer_);
  return ncclSuccess;
}

void SocketNetConnecting::wait(int ms) const {
  std::vector<pollfd> fds;
  for (const SocketConnector& connector : connectors_) {
    if (connector.valid())
      fds.push_back(pollfd{connector.fd(), static_cast<short>(connector.wantsWrite() ? POLLOUT : POLLIN), 0});
  }
  (void)::poll(fds.data(), fds.size(), ms);
}

ncclResult_t socketNetConnect(const SocketNetHandle& handle, int nSocks, std::unique_ptr<SocketNetConn>* out,
                              const std::function<ncclResult_t()>& pump) {
  std::unique_ptr<SocketNetConnecting> connecting;
  NCCLCHECK(SocketNetConnecting::start(handle, nSocks, &connecting));
  for (;;) {
    NCCLCHECK(connecting->progress(out));
    if (*out != nullptr) return ncclSuccess;
    if (pump) NCCLCHECK(pump());
    connecting->wait(pump ? 1 : kSocketPollSliceMs);
  }
}

}  // namespace braid::net
