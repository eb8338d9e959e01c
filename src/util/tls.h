// TLS 1.3 with an external pre-shared key (PSK) on the TCP connections between Braid processes
// (util/socket.h: bootstrap, board servers, the socket network), through OpenSSL 3 loaded at run
// time (util/openssl_api.h).
//
// The setting is process-wide (ncclSetEncryption): tlsSetPsk turns encryption on, tlsDisable off;
// when neither was ever called, BRAID_ENCRYPTION_PSK_FILE is read on first use. A listener or a
// connection takes the setting current when it is created (tlsCurrent) and keeps it, as it keeps
// its handshake key: set it before ncclGetUniqueId and before creating communicators.
//
// Fail closed: once encryption was requested, a failure to provide it (OpenSSL missing, a key
// file that cannot be used) makes tlsCurrent, and so every new listener and connection, fail with
// a WARN, until encryption is set again or turned off. Nothing falls back to plain text.
//
// Keys: every connection authenticates with the same TLS PSK, HMAC-SHA256 over the configured key
// with a label of its own (so it differs from the handshake keys of util/socket_auth.h), and
// derives fresh traffic keys from an ECDHE exchange (TLS 1.3's psk_dhe_ke: forward secrecy). One
// cipher suite, TLS_AES_128_GCM_SHA256; no certificates; no session tickets; a handshake that did
// not use the PSK is refused on both sides.
//
// A TlsSession wraps one connected non-blocking fd that it does not own. Its I/O never blocks:
// kWouldBlock says the socket must become readable (or writable, wantsWrite()) first. Records are
// read exactly (no read-ahead), so the only input it can hold that the kernel no longer reports is
// plain text of a record already read: hasBufferedInput() says so, and a caller that polls before
// it reads must count it as input. A write that returned kWouldBlock must be retried with the same
// bytes (more may follow them): TLS has committed them to a record. One thread at a time may use a
// session; a mutex makes concurrent sends and receives on one socket safe, as they are on a plain
// socket.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace braid {

namespace ossl {
struct Api;
struct Ssl;
}  // namespace ossl

// NCCL's minimum length of a PSK.
constexpr size_t kTlsMinPskBytes = 32;

class TlsContext;

// Turns encryption on with `psk` (`bytes` long, at least kTlsMinPskBytes) for listeners and
// connections created from now on. A short key fails with ncclInvalidArgument and changes
// nothing; a failure to load OpenSSL fails with ncclSystemError and leaves encryption requested
// but unavailable (see above). `caller` begins the WARNs.
[[nodiscard]] ncclResult_t tlsSetPsk(const char* psk, size_t bytes, const char* caller);
// Plain text from now on (also after a failed tlsSetPsk).
void tlsDisable();
// The context new listeners and connections use: null when encryption is off. Fails, with a WARN,
// while encryption is requested but unavailable.
[[nodiscard]] ncclResult_t tlsCurrent(std::shared_ptr<const TlsContext>* out);
// Whether encryption is asked for (available or not): the pre-shared key then authenticates every
// peer, whatever the handshake keys of util/socket_auth.h are.
bool tlsRequested();
// Forgets the setting, so that the next tlsCurrent reads BRAID_ENCRYPTION_PSK_FILE again. For tests.
void tlsReset();
// What turned encryption on, for messages: "ncclSetEncryption" or "BRAID_ENCRYPTION_PSK_FILE".
const char* tlsSource(const TlsContext& context);
// Loads OpenSSL and builds a context for `psk` (the setting's work, util/tls_setting.cc). `source`
// is what tlsSource will say; `caller` begins the WARNs.
[[nodiscard]] ncclResult_t tlsCreateContext(const char* psk, size_t bytes, const char* source, const char* caller,
                                            std::shared_ptr<const TlsContext>* out);

enum class TlsStatus {
  kDone,        // the handshake is complete, or all the bytes moved
  kWouldBlock,  // wait for input (or, wantsWrite(), for room to send), then call again
  kClosed,      // the peer ended the connection
  kFailed,      // error() and lastErrno() say what
};

class TlsSession {
 public:
  // A session on `fd` in the connector's (client's) or the acceptor's (server's) role.
  [[nodiscard]] static ncclResult_t create(std::shared_ptr<const TlsContext> context, int fd, bool acceptor,
                                           std::unique_ptr<TlsSession>* out);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // One step of the handshake.
  TlsStatus handshake();
  bool established() const { return established_.load(std::memory_order_acquire); }
  // Moves what it can of `bytes` now; *moved says how many (possibly some before kWouldBlock).
  TlsStatus write(const void* data, size_t bytes, size_t* moved);
  TlsStatus read(void* data, size_t bytes, size_t* moved);
  bool hasBufferedInput() const;
  bool wantsWrite() const { return wantsWrite_.load(std::memory_order_relaxed); }
  // After kFailed: the reason ("error:0A000419:SSL routines::tlsv1 alert decrypt error", or an
  // errno's text), and the errno of a failed send or recv (0 for a TLS failure).
  const std::string& error() const { return error_; }
  int lastErrno() const { return ioErrno_; }

 private:
  TlsSession() = default;
  // Classifies a failed OpenSSL call (its return value `ret`).
  TlsStatus failed(int ret);
  // The socket's side of the BIO: bytes moved, 0 at the end of the stream, -1 on an error
  // (ioErrno_), kBioRetry when the socket would block.
  static constexpr int kBioRetry = -2;
  int bioRead(char* buffer, int bytes);
  int bioWrite(const char* buffer, int bytes);
  friend struct TlsBio;

  std::shared_ptr<const TlsContext> context_;
  const ossl::Api* api_ = nullptr;
  ossl::Ssl* ssl_ = nullptr;
  int fd_ = -1;
  bool acceptor_ = false;
  // Read without the mutex by the owner's poll() set-up.
  std::atomic<bool> established_{false};
  std::atomic<bool> wantsWrite_{false};
  bool eof_ = false;  // recv() returned 0
  int ioErrno_ = 0;   // the last failed send or recv
  // kClosed or kFailed once the connection ended: OpenSSL allows no more I/O then, so every later
  // call answers the same.
  TlsStatus ended_ = TlsStatus::kDone;
  std::string error_;
  mutable std::mutex mutex_;
};

}  // namespace braid
