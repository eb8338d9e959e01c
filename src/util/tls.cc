// TLS contexts and sessions over OpenSSL 3 (see tls.h).
#include "util/tls.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "util/check.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/openssl_api.h"

namespace braid {
namespace {

constexpr char kPskLabel[] = "braid-tls-psk-v1";
constexpr unsigned char kPskIdentity[] = "braid-psk-v1";
constexpr size_t kPskIdentityBytes = sizeof(kPskIdentity) - 1;
constexpr char kCipherSuite[] = "TLS_AES_128_GCM_SHA256";
// The SSL object's slot (OpenSSL's "app data") that points to the session's context.
constexpr int kContextSlot = 0;

// Set by the first context, the same pointer ever after: the BIO callbacks need it before they
// know their session.
std::atomic<const ossl::Api*> gApi{nullptr};

const ossl::Api& api() { return *gApi.load(std::memory_order_relaxed); }

}  // namespace

class TlsContext {
 public:
  static ncclResult_t create(const char* psk, size_t bytes, const char* source, const char* caller,
                             std::shared_ptr<const TlsContext>* out);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  const ossl::Api& api() const { return *api_; }
  ossl::SslCtx* sslContext(bool acceptor) const { return acceptor ? acceptorCtx_ : connectorCtx_; }
  ossl::BioMethod* bioMethod() const { return bioMethod_; }
  const char* source() const { return source_; }
  // A fresh resumption session that carries the PSK, as OpenSSL's PSK callbacks hand out.
  ossl::SslSession* pskSession(ossl::Ssl* ssl) const;

 private:
  TlsContext() = default;
  [[nodiscard]] ncclResult_t build(const char* caller);
  [[nodiscard]] ncclResult_t configure(ossl::SslCtx* ctx, const char* caller) const;

  const ossl::Api* api_ = nullptr;
  ossl::SslCtx* connectorCtx_ = nullptr;
  ossl::SslCtx* acceptorCtx_ = nullptr;
  ossl::BioMethod* bioMethod_ = nullptr;
  std::array<uint8_t, kSha256Bytes> key_{};
  const char* source_ = "";
};

// The BIO between OpenSSL and a session's socket: send() with MSG_NOSIGNAL (OpenSSL's own socket
// BIO uses write(), which raises SIGPIPE on a closed connection) and recv(), never blocking.
struct TlsBio {
  static TlsSession* sessionOf(ossl::Bio* bio) { return static_cast<TlsSession*>(api().BIO_get_data(bio)); }
  static int settle(ossl::Bio* bio, int n, int retryFlag) {
    if (n != TlsSession::kBioRetry) return n;
    api().BIO_set_flags(bio, retryFlag | ossl::kBioFlagsShouldRetry);
    return -1;
  }
  static int read(ossl::Bio* bio, char* buffer, int bytes) {
    api().BIO_clear_flags(bio, ossl::kBioFlagsRws | ossl::kBioFlagsShouldRetry);
    return settle(bio, sessionOf(bio)->bioRead(buffer, bytes), ossl::kBioFlagsRead);
  }
  static int write(ossl::Bio* bio, const char* buffer, int bytes) {
    api().BIO_clear_flags(bio, ossl::kBioFlagsRws | ossl::kBioFlagsShouldRetry);
    return settle(bio, sessionOf(bio)->bioWrite(buffer, bytes), ossl::kBioFlagsWrite);
  }
  // Only a flush is answered: nothing is buffered here.
  static long ctrl(ossl::Bio* /*bio*/, int cmd, long /*num*/, void* /*ptr*/) {
    return cmd == ossl::kBioCtrlFlush ? 1 : 0;
  }
  static int create(ossl::Bio* bio) {
    api().BIO_set_init(bio, 1);
    return 1;
  }
};

namespace {

const TlsContext* contextOf(ossl::Ssl* ssl) {
  return static_cast<const TlsContext*>(api().SSL_get_ex_data(ssl, kContextSlot));
}

// The connector offers the PSK under Braid's identity.
int pskUseSession(ossl::Ssl* ssl, const ossl::EvpMd* /*md*/, const unsigned char** id, size_t* idLen,
                  ossl::SslSession** session) {
  *id = kPskIdentity;
  *idLen = kPskIdentityBytes;
  *session = contextOf(ssl)->pskSession(ssl);
  return *session != nullptr ? 1 : 0;
}

// The acceptor knows one identity; any other leaves the handshake without a PSK, and so refused.
int pskFindSession(ossl::Ssl* ssl, const unsigned char* id, size_t idLen, ossl::SslSession** session) {
  *session = nullptr;
  if (idLen != kPskIdentityBytes || std::memcmp(id, kPskIdentity, idLen) != 0) return 1;
  *session = contextOf(ssl)->pskSession(ssl);
  return *session != nullptr ? 1 : 0;
}

}  // namespace

ossl::SslSession* TlsContext::pskSession(ossl::Ssl* ssl) const {
  const ossl::Api& a = *api_;
  const ossl::SslCipher* cipher = a.SSL_CIPHER_find(ssl, ossl::kCipherAes128GcmSha256);
  ossl::SslSession* session = a.SSL_SESSION_new();
  if (session == nullptr || cipher == nullptr ||
      a.SSL_SESSION_set_protocol_version(session, ossl::kTls13Version) != 1 ||
      a.SSL_SESSION_set_cipher(session, cipher) != 1 ||
      a.SSL_SESSION_set1_master_key(session, key_.data(), key_.size()) != 1) {
    if (session != nullptr) a.SSL_SESSION_free(session);
    return nullptr;
  }
  return session;
}

ncclResult_t TlsContext::create(const char* psk, size_t bytes, const char* source, const char* caller,
                                std::shared_ptr<const TlsContext>* out) {
  std::shared_ptr<TlsContext> context(new TlsContext());
  NCCLCHECK(ossl::load(caller, &context->api_));
  gApi.store(context->api_, std::memory_order_relaxed);
  context->source_ = source;
  HmacSha256 mac(kPskLabel, sizeof(kPskLabel) - 1);
  mac.update(psk, bytes);
  const Sha256Digest key = mac.final();
  std::memcpy(context->key_.data(), key.data(), key.size());
  NCCLCHECK(context->build(caller));
  *out = std::move(context);
  return ncclSuccess;
}

ncclResult_t TlsContext::configure(ossl::SslCtx* ctx, const char* caller) const {
  const ossl::Api& a = *api_;
  const long mode = ossl::kModeEnablePartialWrite | ossl::kModeAcceptMovingWriteBuffer;
  if (ctx == nullptr || a.SSL_CTX_ctrl(ctx, ossl::kCtrlSetMinProtoVersion, ossl::kTls13Version, nullptr) != 1 ||
      a.SSL_CTX_ctrl(ctx, ossl::kCtrlSetMaxProtoVersion, ossl::kTls13Version, nullptr) != 1 ||
      a.SSL_CTX_set_ciphersuites(ctx, kCipherSuite) != 1 || a.SSL_CTX_set_num_tickets(ctx, 0) != 1 ||
      (a.SSL_CTX_ctrl(ctx, ossl::kCtrlMode, mode, nullptr) & mode) != mode) {
    char text[256];
    WARN("%s: OpenSSL refused the TLS 1.3 settings (%s)", caller, ossl::lastErrorText(a, text, sizeof(text)));
    return ncclSystemError;
  }
  return ncclSuccess;
}

ncclResult_t TlsContext::build(const char* caller) {
  const ossl::Api& a = *api_;
  bioMethod_ = a.BIO_meth_new(a.BIO_get_new_index() | ossl::kBioTypeSourceSink, "braid socket");
  if (bioMethod_ == nullptr || a.BIO_meth_set_read(bioMethod_, TlsBio::read) != 1 ||
      a.BIO_meth_set_write(bioMethod_, TlsBio::write) != 1 || a.BIO_meth_set_ctrl(bioMethod_, TlsBio::ctrl) != 1 ||
      a.BIO_meth_set_create(bioMethod_, TlsBio::create) != 1) {
    WARN("%s: OpenSSL could not make a BIO method", caller);
    return ncclSystemError;
  }
  connectorCtx_ = a.SSL_CTX_new(a.TLS_method());
  NCCLCHECK(configure(connectorCtx_, caller));
  acceptorCtx_ = a.SSL_CTX_new(a.TLS_method());
  NCCLCHECK(configure(acceptorCtx_, caller));
  // No trust anchors: a server that offered a certificate instead of the PSK fails verification.
  a.SSL_CTX_set_verify(connectorCtx_, ossl::kVerifyPeer, nullptr);
  a.SSL_CTX_set_verify(acceptorCtx_, ossl::kVerifyNone, nullptr);
  a.SSL_CTX_set_psk_use_session_callback(connectorCtx_, pskUseSession);
  a.SSL_CTX_set_psk_find_session_callback(acceptorCtx_, pskFindSession);
  return ncclSuccess;
}

TlsContext::~TlsContext() {
  if (api_ == nullptr) return;
  if (connectorCtx_ != nullptr) api_->SSL_CTX_free(connectorCtx_);
  if (acceptorCtx_ != nullptr) api_->SSL_CTX_free(acceptorCtx_);
  // Every session of this context, and so every BIO of the method, is gone: they hold the context.
  if (bioMethod_ != nullptr) api_->BIO_meth_free(bioMethod_);
  api_->OPENSSL_cleanse(key_.data(), key_.size());
}

const char* tlsSource(const TlsContext& context) { return context.source(); }

ncclResult_t tlsCreateContext(const char* psk, size_t bytes, const char* source, const char* caller,
                              std::shared_ptr<const TlsContext>* out) {
  return TlsContext::create(psk, bytes, source, caller, out);
}

ncclResult_t TlsSession::create(std::shared_ptr<const TlsContext> context, int fd, bool acceptor,
                                std::unique_ptr<TlsSession>* out) {
  std::unique_ptr<TlsSession> s(new TlsSession());
  const ossl::Api& a = context->api();
  s->api_ = &a;
  s->fd_ = fd;
  s->acceptor_ = acceptor;
  s->ssl_ = a.SSL_new(context->sslContext(acceptor));
  ossl::Bio* bio = s->ssl_ != nullptr ? a.BIO_new(context->bioMethod()) : nullptr;
  if (bio == nullptr) {
    char text[256];
    WARN("OpenSSL could not make a TLS connection object (%s)", ossl::lastErrorText(a, text, sizeof(text)));
    return ncclSystemError;
  }
  a.BIO_set_data(bio, s.get());
  a.SSL_set_bio(s->ssl_, bio, bio);  // the SSL object owns the BIO now
  (void)a.SSL_set_ex_data(s->ssl_, kContextSlot, const_cast<TlsContext*>(context.get()));
  if (acceptor) {
    a.SSL_set_accept_state(s->ssl_);
  } else {
    a.SSL_set_connect_state(s->ssl_);
  }
  s->context_ = std::move(context);
  *out = std::move(s);
  return ncclSuccess;
}

TlsSession::~TlsSession() {
  if (ssl_ != nullptr) api_->SSL_free(ssl_);
}

int TlsSession::bioRead(char* buffer, int bytes) {
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer, static_cast<size_t>(bytes), 0);
    if (n > 0) return static_cast<int>(n);
    if (n == 0) {
      eof_ = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kBioRetry;
    ioErrno_ = errno;
    return -1;
  }
}

int TlsSession::bioWrite(const char* buffer, int bytes) {
  for (;;) {
    const ssize_t n = ::send(fd_, buffer, static_cast<size_t>(bytes), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kBioRetry;
    ioErrno_ = errno;
    return -1;
  }
}

TlsStatus TlsSession::failed(int ret) {
  const int e = api_->SSL_get_error(ssl_, ret);
  if (e == ossl::kErrorWantRead || e == ossl::kErrorWantWrite) {
    wantsWrite_ = e == ossl::kErrorWantWrite;
    return TlsStatus::kWouldBlock;
  }
  char text[256];
  const char* reason = ossl::lastErrorText(*api_, text, sizeof(text));
  if (ioErrno_ != 0) {
    error_ = std::string(strerror(ioErrno_)) + " (errno " + std::to_string(ioErrno_) + ")";
    ended_ = TlsStatus::kFailed;
  } else if (eof_ || e == ossl::kErrorZeroReturn) {
    // The end of the stream, with or without TLS's close_notify: a closed connection, as on a
    // plain socket (the framing above says whether a message was cut short).
    ended_ = TlsStatus::kClosed;
  } else {
    error_ = reason[0] != '\0' ? reason : "OpenSSL error " + std::to_string(e);
    ended_ = TlsStatus::kFailed;
  }
  return ended_;
}

TlsStatus TlsSession::handshake() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ended_ != TlsStatus::kDone) return ended_;
  if (established_) return TlsStatus::kDone;
  api_->ERR_clear_error();
  const int ret = api_->SSL_do_handshake(ssl_);
  if (ret != 1) return failed(ret);
  wantsWrite_ = false;
  if (api_->SSL_session_reused(ssl_) != 1) {
    error_ = "the handshake did not use the pre-shared key";
    ended_ = TlsStatus::kFailed;
    return ended_;
  }
  established_ = true;
  return TlsStatus::kDone;
}

TlsStatus TlsSession::write(const void* data, size_t bytes, size_t* moved) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* p = static_cast<const char*>(data);
  *moved = 0;
  if (ended_ != TlsStatus::kDone) return ended_;
  while (*moved < bytes) {
    size_t n = 0;
    api_->ERR_clear_error();
    const int ret = api_->SSL_write_ex(ssl_, p + *moved, bytes - *moved, &n);
    if (ret != 1) return failed(ret);
    *moved += n;
  }
  wantsWrite_ = false;
  return TlsStatus::kDone;
}

TlsStatus TlsSession::read(void* data, size_t bytes, size_t* moved) {
  std::lock_guard<std::mutex> lock(mutex_);
  char* p = static_cast<char*>(data);
  *moved = 0;
  if (ended_ != TlsStatus::kDone) return ended_;
  while (*moved < bytes) {
    size_t n = 0;
    api_->ERR_clear_error();
    const int ret = api_->SSL_read_ex(ssl_, p + *moved, bytes - *moved, &n);
    if (ret != 1) return failed(ret);
    *moved += n;
  }
  wantsWrite_ = false;
  return TlsStatus::kDone;
}

bool TlsSession::hasBufferedInput() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return established_ && api_->SSL_pending(ssl_) > 0;
}

}  // namespace braid
