// The few functions of OpenSSL 3 that util/tls uses, loaded at run time with dlopen, so that the
// library builds without OpenSSL's headers and loads (and runs unencrypted) on hosts without it.
//
// The types are opaque here: every OpenSSL object is only ever handled through a pointer, so our
// own incomplete structs stand for SSL, SSL_CTX, BIO and the rest. The constants below are OpenSSL
// 3's public ABI (ssl.h, bio.h, prov_ssl.h); OpenSSL keeps them stable across its 3.x releases.
//
// libcrypto.so.3 and libssl.so.3 are opened on first need (BRAID_TLS_LIBCRYPTO and
// BRAID_TLS_LIBSSL name other files) and stay loaded until the process exits. A failed load is
// not remembered: a later call tries again.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace braid::ossl {

struct Ssl;
struct SslCtx;
struct SslMethod;
struct SslSession;
struct SslCipher;
struct Bio;
struct BioMethod;
struct EvpMd;

constexpr int kTls13Version = 0x0304;
constexpr int kCtrlMode = 33;
constexpr int kCtrlSetMinProtoVersion = 123;
constexpr int kCtrlSetMaxProtoVersion = 124;
constexpr long kModeEnablePartialWrite = 0x1;
constexpr long kModeAcceptMovingWriteBuffer = 0x2;
constexpr int kVerifyNone = 0x0;
constexpr int kVerifyPeer = 0x1;
constexpr int kErrorNone = 0;
constexpr int kErrorSsl = 1;
constexpr int kErrorWantRead = 2;
constexpr int kErrorWantWrite = 3;
constexpr int kErrorSyscall = 5;
constexpr int kErrorZeroReturn = 6;
constexpr int kBioTypeSourceSink = 0x0400;
constexpr int kBioCtrlFlush = 11;
constexpr int kBioFlagsRead = 0x01;
constexpr int kBioFlagsWrite = 0x02;
constexpr int kBioFlagsRws = 0x07;
constexpr int kBioFlagsShouldRetry = 0x08;
// TLS_AES_128_GCM_SHA256, by its two-byte IANA code (RFC 8446, B.4).
constexpr unsigned char kCipherAes128GcmSha256[2] = {0x13, 0x01};

using PskUseSessionCallback = int (*)(Ssl* ssl, const EvpMd* md, const unsigned char** id, size_t* idLen,
                                      SslSession** session);
using PskFindSessionCallback = int (*)(Ssl* ssl, const unsigned char* id, size_t idLen, SslSession** session);

// The loaded entry points, named as in OpenSSL.
struct Api {
  // libcrypto
  const char* (*OpenSSL_version)(int type);
  unsigned long (*ERR_get_error)();
  void (*ERR_error_string_n)(unsigned long error, char* buffer, size_t bytes);
  void (*ERR_clear_error)();
  void (*OPENSSL_cleanse)(void* ptr, size_t bytes);
  int (*BIO_get_new_index)();
  BioMethod* (*BIO_meth_new)(int type, const char* name);
  void (*BIO_meth_free)(BioMethod* method);
  int (*BIO_meth_set_write)(BioMethod* method, int (*write)(Bio*, const char*, int));
  int (*BIO_meth_set_read)(BioMethod* method, int (*read)(Bio*, char*, int));
  int (*BIO_meth_set_ctrl)(BioMethod* method, long (*ctrl)(Bio*, int, long, void*));
  int (*BIO_meth_set_create)(BioMethod* method, int (*create)(Bio*));
  Bio* (*BIO_new)(const BioMethod* method);
  void (*BIO_set_data)(Bio* bio, void* data);
  void* (*BIO_get_data)(Bio* bio);
  void (*BIO_set_init)(Bio* bio, int init);
  void (*BIO_set_flags)(Bio* bio, int flags);
  void (*BIO_clear_flags)(Bio* bio, int flags);
  // libssl
  int (*OPENSSL_init_ssl)(uint64_t options, const void* settings);
  const SslMethod* (*TLS_method)();
  SslCtx* (*SSL_CTX_new)(const SslMethod* method);
  void (*SSL_CTX_free)(SslCtx* ctx);
  long (*SSL_CTX_ctrl)(SslCtx* ctx, int cmd, long larg, void* parg);
  int (*SSL_CTX_set_ciphersuites)(SslCtx* ctx, const char* suites);
  int (*SSL_CTX_set_num_tickets)(SslCtx* ctx, size_t tickets);
  void (*SSL_CTX_set_verify)(SslCtx* ctx, int mode, void* callback);
  void (*SSL_CTX_set_psk_use_session_callback)(SslCtx* ctx, PskUseSessionCallback callback);
  void (*SSL_CTX_set_psk_find_session_callback)(SslCtx* ctx, PskFindSessionCallback callback);
  Ssl* (*SSL_new)(SslCtx* ctx);
  void (*SSL_free)(Ssl* ssl);
  void (*SSL_set_bio)(Ssl* ssl, Bio* readBio, Bio* writeBio);
  void (*SSL_set_connect_state)(Ssl* ssl);
  void (*SSL_set_accept_state)(Ssl* ssl);
  int (*SSL_set_ex_data)(Ssl* ssl, int index, void* data);
  void* (*SSL_get_ex_data)(const Ssl* ssl, int index);
  int (*SSL_do_handshake)(Ssl* ssl);
  int (*SSL_read_ex)(Ssl* ssl, void* buffer, size_t bytes, size_t* got);
  int (*SSL_write_ex)(Ssl* ssl, const void* buffer, size_t bytes, size_t* written);
  int (*SSL_get_error)(const Ssl* ssl, int ret);
  int (*SSL_pending)(const Ssl* ssl);
  int (*SSL_session_reused)(const Ssl* ssl);
  const SslCipher* (*SSL_CIPHER_find)(Ssl* ssl, const unsigned char* code);
  SslSession* (*SSL_SESSION_new)();
  void (*SSL_SESSION_free)(SslSession* session);
  int (*SSL_SESSION_set1_master_key)(SslSession* session, const unsigned char* key, size_t bytes);
  int (*SSL_SESSION_set_cipher)(SslSession* session, const SslCipher* cipher);
  int (*SSL_SESSION_set_protocol_version)(SslSession* session, int version);
};

// Opens both libraries and resolves every entry point, once per process (thread safe). Fails with
// ncclSystemError and one WARN naming the library or symbol and the loader's message; `caller`
// begins it ("ncclSetEncryption: ...").
[[nodiscard]] ncclResult_t load(const char* caller, const Api** out);

// OpenSSL's error queue of this thread as one line ("error:0A000119:SSL routines::decryption
// failed"), emptied; "" when it holds nothing.
const char* lastErrorText(const Api& api, char* buffer, size_t bytes);

}  // namespace braid::ossl
