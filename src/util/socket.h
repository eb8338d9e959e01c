// TCP sockets for the bootstrap and, later, the socket network transport.
//
// Contract:
// - Every fd is non-blocking and close-on-exec, owned by exactly one Socket (RAII, move-only).
// - Every wait is a poll() in slices of at most kSocketPollSliceMs, bounded by a Deadline, which
//   also carries an optional abort flag: a timeout or an abort is noticed within one slice.
// - A connection starts with a mutual challenge-response handshake (util/socket_auth.h derives
//   the key from the shared magic and the configured secret; neither is ever sent):
//     acceptor  -> connector: acceptor nonce (16 bytes, fresh from getrandom)
//     connector -> acceptor:  SocketType (4), connector nonce (16), connector proof (32)
//     acceptor  -> connector: acceptor proof (32)
//   A proof is HMAC-SHA256(key, "braid-v1" || role || type || acceptor nonce || connector nonce).
//   The acceptor drops connections of another type with an INFO line, and refuses a wrong proof
//   (a stranger, a replayed exchange, a peer with another secret) with a rate-limited WARN; the
//   connector fails when the acceptor's proof is wrong. Only then does the connector send data.
// - Encryption (util/tls.h): a listener or connector takes the process's TLS setting when it is
//   created. The type word of both proofs carries it in its top bit (kSocketTlsFlag), so the two
//   ends learn each other's setting from an authenticated word that nobody in between can change:
//   when they differ, the acceptor WARNs, answers with the proof of its own word and closes, and
//   the connector, finding the acceptor's proof valid for the other setting, WARNs that the
//   settings differ (ncclRemoteError on both sides, never a hang or garbage). When both encrypt, a
//   TLS 1.3 handshake follows at once (a wrong pre-shared key fails it, with a WARN on both sides)
//   and everything after it, the greeting included, goes through TLS: sendSome/recvSome and the
//   rest of the API below work the same, non-blocking as before.
// - Framed messages are a uint64 length followed by the payload.
// - Failures log exactly one WARN naming the peer (the socket's description and address) and the
//   errno text, and return ncclSystemError (a local call failed), ncclRemoteError (the peer closed,
//   reset, refused or did not answer in time) or ncclInvalidUsage (a message larger than the
//   buffer; ncclInvalidArgument for an address that is neither IPv4 nor IPv6). An abort returns ncclInternalError with
//   an INFO line, not a WARN: it is not a failure.
// Byte order is the host's: both ends run the same library on the same architecture.
#pragma once

#include <nccl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/rate_limit.h"
#include "util/socket_auth.h"
#include "util/socket_tls.h"
#include "util/unique_fd.h"

namespace braid {

// sockaddr of either family, 28 bytes: the layout NCCL stores at bytes 8-35 of a unique id.
union SocketAddress {
  sockaddr sa;
  sockaddr_in sin;
  sockaddr_in6 sin6;
};
static_assert(sizeof(SocketAddress) == 28, "SocketAddress must keep NCCL's 28-byte layout");

// True for AF_INET and AF_INET6 addresses.
bool socketAddressIsValid(const SocketAddress& addr);
socklen_t socketAddressLength(const SocketAddress& addr);
uint16_t socketAddressPort(const SocketAddress& addr);
void socketAddressSetPort(SocketAddress* addr, uint16_t port);
// "10.0.0.1:5000", "[fd00::2]:5000"; "<invalid family N>" for anything else. For messages.
std::string socketAddressToString(const SocketAddress& addr);
// Parses "ipv4:port", "[ipv6]:port" or "hostname:port" (resolved; IPv4 results preferred unless
// `family` is AF_INET6; `family` AF_UNSPEC takes any). Fails with one WARN naming `what` (for
// example "NCCL_COMM_ID") and ncclInvalidUsage.
[[nodiscard]] ncclResult_t socketAddressParse(const std::string& text, int family, const char* what,
                                              SocketAddress* out);

// The type word of the handshake (the values NCCL uses).
enum class SocketType : uint32_t { kBootstrap = 1, kProxy = 2, kNetSocket = 3, kNetIb = 4, kRas = 5 };
// Set in the handshake's type word by an end that encrypts (see the contract above).
constexpr uint32_t kSocketTlsFlag = 0x80000000u;

constexpr int kSocketPollSliceMs = 20;

// The bit of an abort flag that makes host waits give up. A communicator's flag holds other bits
// as well (watch/abort_flag.h: whether its kernels were told to stop, which leaves its host waits
// going); a plain flag that is set to 1 works the same.
constexpr int kAbortHostWaits = 1;

// A point in time after which a wait gives up, and an optional abort flag that cuts it short.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds timeout, const std::atomic<int>* abortFlag = nullptr);
  static Deadline never(const std::atomic<int>* abortFlag = nullptr);
  // The earlier of this deadline and now + timeout, with the same abort flag.
  Deadline capped(std::chrono::milliseconds timeout) const;

  bool expired() const { return !infinite_ && Clock::now() >= when_; }
  bool aborted() const {
    return abortFlag_ != nullptr && (abortFlag_->load(std::memory_order_acquire) & kAbortHostWaits) != 0;
  }
  // Milliseconds to wait in the next poll(): min(remaining, maxSliceMs), at least 0.
  int sliceMs(int maxSliceMs = kSocketPollSliceMs) const;
  // Seconds of the original timeout, for messages ("after 3 s").
  double timeoutSeconds() const { return timeoutSeconds_; }
  const std::atomic<int>* abortFlag() const { return abortFlag_; }

 private:
  Clock::time_point when_{};
  bool infinite_ = true;
  double timeoutSeconds_ = 0;
  const std::atomic<int>* abortFlag_ = nullptr;
};

// Called by Socket::connect while it waits for the acceptor's side of the handshake: waits at most
// one poll slice for `fd` to become readable while serving the caller's own sockets (a rank that
// connects to a peer which is itself connecting must keep accepting, or both wait forever).
using SocketPump = std::function<ncclResult_t(int fd)>;

class Socket {
 public:
  Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  void close();
  // Whether this connection (or, for a listener, each it accepts) goes through TLS.
  bool encrypted() const { return tls_.encrypts(); }
  // Input already taken from the kernel and not yet read (a TLS record read in part): a caller
  // that polls before it reads must treat the socket as readable while this is true.
  bool hasBufferedInput() const { return tls_.hasBufferedInput(); }

  // For a listener: the bound address with its real port. For a connection: our end.
  const SocketAddress& localAddress() const { return local_; }
  // The other end of a connection.
  const SocketAddress& peerAddress() const { return peer_; }
  // Who the peer is, for messages ("bootstrap root 0", "rank 3"); the address is added to it.
  void setDescription(std::string description) { description_ = std::move(description); }
  // "rank 3 (10.0.0.1:4321)"
  std::string peerName() const;

  // Binds to `local` (port 0: an ephemeral port) with SO_REUSEADDR and listens. A SocketAcceptor
  // on it returns only connections that proved the key of `magic` for `type`.
  [[nodiscard]] static ncclResult_t listen(const SocketAddress& local, uint64_t magic, SocketType type, Socket* out);
  // The same with the key itself (socket_auth.h: a listener's own secret, socketAuthKeyForSecret).
  [[nodiscard]] static ncclResult_t listen(const SocketAddress& local, const SocketAuthKey& key, SocketType type,
                                           Socket* out);
  SocketType type() const { return type_; }

  // Connects to `remote` and makes the handshake (SocketConnector, util/socket_connector.h, does
  // it in steps for callers that must not wait). Connection attempts are retried on ETIMEDOUT,
  // ECONNRESET and EINTR, and on ECONNREFUSED only when `retryRefused` (the listener may not exist
  // yet; otherwise a refusal means the peer is gone and waiting would only delay the error), at
  // most NCCL_SOCKET_RETRY_CNT times with attempt k sleeping k * NCCL_SOCKET_RETRY_SLEEP_MSEC.
  // Unreachable hosts and networks fail at once. `peerDescription` names the peer in messages.
  // Returns once the handshake is complete; while it waits for the acceptor, `pump` (if given)
  // serves the caller's own sockets.
  [[nodiscard]] static ncclResult_t connect(const SocketAddress& remote, uint64_t magic, SocketType type,
                                            const std::string& peerDescription, bool retryRefused,
                                            const Deadline& deadline, Socket* out, const SocketPump& pump = {});
  // The same with the key itself.
  [[nodiscard]] static ncclResult_t connect(const SocketAddress& remote, const SocketAuthKey& key, SocketType type,
                                            const std::string& peerDescription, bool retryRefused,
                                            const Deadline& deadline, Socket* out, const SocketPump& pump = {});

  [[nodiscard]] ncclResult_t sendAll(const void* data, size_t bytes, const Deadline& deadline);
  [[nodiscard]] ncclResult_t recvAll(void* data, size_t bytes, const Deadline& deadline);
  // Framed message: uint64 length, then the payload. recvMsg fails ("message truncated", naming
  // both sizes) when the sender sent more than `capacity`; the connection is then out of step and
  // should be closed.
  [[nodiscard]] ncclResult_t sendMsg(const void* data, size_t bytes, const Deadline& deadline);
  [[nodiscard]] ncclResult_t recvMsg(void* data, size_t capacity, size_t* received, const Deadline& deadline);

  // Non-blocking pieces for callers that multiplex several sockets with their own poll().
  // sendSome/recvSome move what they can now and add it to *done. recvSome sets *closed, without
  // a WARN, when the peer closed or reset the connection: the caller knows what that means.
  [[nodiscard]] ncclResult_t sendSome(const void* data, size_t bytes, size_t* done);
  [[nodiscard]] ncclResult_t recvSome(void* data, size_t bytes, size_t* done, bool* closed);
  // One system call each: sendSomeV sends what it can of the buffers in order and adds the bytes
  // to *sent; recvOnce reads what is there, up to `bytes`, into *got (0: nothing yet or closed).
  [[nodiscard]] ncclResult_t sendSomeV(const iovec* iov, int count, size_t* sent);
  [[nodiscard]] ncclResult_t recvOnce(void* data, size_t bytes, size_t* got, bool* closed);

  // Makes the kernel abort the connection (ETIMEDOUT, which sendSome/recvSome report as
  // ncclRemoteError) once the peer's host has acknowledged nothing for `ms`: sent data
  // unacknowledged (TCP_USER_TIMEOUT), or, on an idle connection, keepalive probes unanswered.
  // Without it a dropped link leaves a waiting receiver blocked for hours. 0 keeps the kernel's
  // defaults.
  void setUnansweredTimeout(int64_t ms);

 private:
  Socket(UniqueFd fd, const SocketAddress& local, const SocketAddress& peer);
  [[nodiscard]] ncclResult_t waitReady(short events, const Deadline& deadline, const char* what);

  UniqueFd fd_;
  SocketAuthKey key_{};  // a listener's
  SocketType type_ = SocketType::kBootstrap;
  SocketAddress local_{};
  SocketAddress peer_{};
  std::string description_;
  SocketTls tls_;  // a listener's setting; a connection's setting and session

  friend class SocketAcceptor;
  friend class SocketConnector;
};

// The connector's handshake message, packed: the 4-byte type, its nonce, its proof.
constexpr size_t kSocketHandshakeBytes = 4 + kSocketNonceBytes + kSocketProofBytes;

// The connector's handshake message, as sent.
struct SocketHandshake {
  uint32_t type;  // a SocketType, as sent: any value a stranger chose
  SocketNonce connectorNonce;
  SocketProof proof;  // the connector's proof for the acceptor's challenge
};

// Writes the connector's handshake message; `out` holds kSocketHandshakeBytes.
void encodeSocketHandshake(const SocketHandshake& h, uint8_t* out);
// Reads the first kSocketHandshakeBytes of `data` (a listener checks them as soon as they are in,
// before the hello that follows). ncclInvalidUsage when fewer bytes than that are given.
[[nodiscard]] ncclResult_t parseSocketHandshake(const uint8_t* data, size_t size, SocketHandshake* out);
// Whether a parsed handshake proves that the connector holds `key` for the type it sent, in answer
// to the acceptor's `challenge` (constant time). The caller checks the type itself first.
bool socketHandshakeProves(const SocketHandshake& h, const SocketAuthKey& key, const SocketNonce& challenge);
// The connector's check of the acceptor's answer: whether `proof` proves that the acceptor holds
// `key`, for the connector's `type`, the acceptor's `challenge` and the connector's `nonce`.
bool socketAcceptorProofValid(const SocketAuthKey& key, uint32_t type, const SocketNonce& challenge,
                              const SocketNonce& nonce, const SocketProof& proof);

// A connection that passed the handshake, with the fixed-size greeting its peer sent right after.
struct AcceptedConnection {
  Socket socket;
  std::vector<char> hello;
};

// Accepts connections on a listener without ever blocking on one peer: each new connection's
// handshake and `helloBytes` greeting are read as they arrive, so a silent or garbage peer cannot
// stall a server that waits for many others. Connections of another type, that close early, or
// that take longer than `handshakeTimeout` are dropped with an INFO line; a wrong proof with a
// WARN (rate-limited below), which names the peer's address and never the key, magic or secret.
// Hostile or broken peers cannot stop the listener:
// - at most `maxPending` connections wait in their handshake; a new one beyond that drops the
//   oldest, so silent connections cannot exhaust the process's descriptors;
// - accept() failing for lack of descriptors (EMFILE, ENFILE) drops the oldest pending connection
//   to make room, or, with none, backs off kAcceptBackoffMs; lack of memory (ENOBUFS, ENOMEM)
//   backs off too. The listener keeps serving either way;
// - each of these causes WARNs at most once per 10 s per listener (RateLimit).
// Only a failure of the listening socket itself (a closed or invalid fd) makes progress() fail.
class SocketAcceptor {
 public:
  static constexpr size_t kDefaultMaxPending = 128;
  static constexpr int kAcceptBackoffMs = 20;
  // Connections accepted per progress() call, so that a flood cannot keep one call busy forever.
  static constexpr int kMaxAcceptsPerProgress = 64;

  SocketAcceptor() = default;
  SocketAcceptor(Socket listener, size_t helloBytes,
                 std::chrono::milliseconds handshakeTimeout = std::chrono::milliseconds(5000),
                 size_t maxPending = kDefaultMaxPending);

  bool valid() const { return listener_.valid(); }
  const Socket& listener() const { return listener_; }
  // Closes the listener and every connection not yet taken.
  void close();

  // Appends the fds to poll for input: the listener and the connections still in their handshake.
  void addPollFds(std::vector<pollfd>* fds) const;
  // Accepts what is queued and reads what has arrived, without blocking; complete connections
  // queue up for takeReady(). Fails only when the listener itself fails.
  [[nodiscard]] ncclResult_t progress();
  // Pops the oldest complete connection; false if there is none.
  bool takeReady(AcceptedConnection* out);
  // Waits for one complete connection.
  [[nodiscard]] ncclResult_t accept(const Deadline& deadline, AcceptedConnection* out);

 private:
  struct Pending {
    Socket socket;
    SocketNonce nonce{};       // the challenge sent to the connector
    std::vector<char> buffer;  // handshake + hello
    size_t received = 0;
    Deadline::Clock::time_point expires;
    // The handshake, the greeting and (when it encrypts) the TLS handshake are done.
    bool complete() const { return received == buffer.size() && !socket.tls_.handshaking(); }
  };
  enum WarnCause : size_t { kWarnNoDescriptors, kWarnNoMemory, kWarnPendingCap, kWarnBadProof, kWarnTls };
  // Reads what is available; false when the connection must be dropped.
  bool readPending(Pending* pending);
  // Reads plain bytes until pending->received reaches `limit` or the socket would block.
  bool readRaw(Pending* pending, size_t limit, const std::string& from);
  // The greeting through TLS, after its handshake (util/socket_tls.cc); false: drop it.
  bool readTlsHello(Pending* pending, const std::string& from);
  // Checks a complete connector handshake and answers with this side's proof; false: drop it.
  bool checkHandshake(Pending* pending, const std::string& from);
  // Sends a new connection its challenge; false: drop it.
  bool sendChallenge(Pending* pending);
  // Moves a connection whose handshake and hello are complete to the ready queue.
  void markReady(Pending* pending);
  // Reads a new connection at once (a real peer has usually sent everything with its connect),
  // then queues it as ready or pending, or drops it.
  void admit(Pending pending);
  // Closes the oldest connection still in its handshake (a rate-limited WARN says why); false if
  // there is none.
  bool dropOldestPending(WarnCause cause, const std::string& why);
  enum class AcceptRecovery { kRetry, kBackedOff, kFailed };
  // Handles a failed accept(): kRetry once a descriptor was freed, kBackedOff after a pause,
  // kFailed (WARNed) when the listener itself failed.
  AcceptRecovery acceptFailed(int err);

  Socket listener_;
  size_t helloBytes_ = 0;
  std::chrono::milliseconds handshakeTimeout_{5000};
  size_t maxPending_ = kDefaultMaxPending;
  RateLimit warnLimit_;
  std::vector<Pending> pending_;
  std::deque<AcceptedConnection> ready_;
};

// Sleeps up to `ms` in poll slices; false if the deadline expired or the abort flag was raised.
bool deadlineSleep(int ms, const Deadline& deadline);

}  // namespace braid
