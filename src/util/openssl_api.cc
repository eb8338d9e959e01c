// Run-time loading of OpenSSL 3 (see openssl_api.h).
#include "util/openssl_api.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "util/log.h"
#include "util/params.h"

namespace braid::ossl {
namespace {

enum class Lib { kCrypto, kSsl };

struct Symbol {
  Lib lib;
  const char* name;
  void** slot;
};

// Every entry point of Api with the library that defines it. The casts store a function pointer
// through void*, which POSIX dlsym requires to work.
template <typename F>
void** slotOf(F* member) {
  return reinterpret_cast<void**>(member);
}

#define BRAID_OSSL_SYMBOL(lib, name) \
  Symbol { lib, #name, slotOf(&api->name) }

std::vector<Symbol> symbolsOf(Api* api) {
  return {
      BRAID_OSSL_SYMBOL(Lib::kCrypto, OpenSSL_version),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, ERR_get_error),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, ERR_error_string_n),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, ERR_clear_error),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, OPENSSL_cleanse),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_get_new_index),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_meth_new),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_meth_free),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_meth_set_write),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_meth_set_read),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_meth_set_ctrl),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_meth_set_create),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_new),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_set_data),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_get_data),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_set_init),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_set_flags),
      BRAID_OSSL_SYMBOL(Lib::kCrypto, BIO_clear_flags),
      BRAID_OSSL_SYMBOL(Lib::kSsl, OPENSSL_init_ssl),
      BRAID_OSSL_SYMBOL(Lib::kSsl, TLS_method),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_new),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_free),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_ctrl),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_set_ciphersuites),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_set_num_tickets),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_set_verify),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_set_psk_use_session_callback),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CTX_set_psk_find_session_callback),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_new),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_free),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_set_bio),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_set_connect_state),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_set_accept_state),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_set_ex_data),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_get_ex_data),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_do_handshake),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_read_ex),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_write_ex),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_get_error),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_pending),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_session_reused),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_CIPHER_find),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_SESSION_new),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_SESSION_free),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_SESSION_set1_master_key),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_SESSION_set_cipher),
      BRAID_OSSL_SYMBOL(Lib::kSsl, SSL_SESSION_set_protocol_version),
  };
}

#undef BRAID_OSSL_SYMBOL

const char* dlerrorText() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

// Closes what a failed load opened.
struct Handles {
  void* crypto = nullptr;
  void* ssl = nullptr;
  ~Handles() {
    if (ssl != nullptr) dlclose(ssl);
    if (crypto != nullptr) dlclose(crypto);
  }
};

ncclResult_t openLibraries(const char* caller, Api* api, Handles* h) {
  const std::string& cryptoName = paramString(ParamId::kTlsLibcrypto);
  const std::string& sslName = paramString(ParamId::kTlsLibssl);
  // libssl first: it needs libcrypto and loads it, so a host without OpenSSL is told about libssl.
  // RTLD_LOCAL: OpenSSL's symbols stay out of the global namespace, where they could interpose on
  // another copy of OpenSSL the application uses.
  const char* const hint =
      "TLS needs OpenSSL 3 (libssl.so.3 and libcrypto.so.3; on Debian and Ubuntu the libssl3 package)";
  h->ssl = dlopen(sslName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h->ssl == nullptr) {
    WARN("%s: %s could not be loaded (%s): %s", caller, sslName.c_str(), dlerrorText(), hint);
    return ncclSystemError;
  }
  h->crypto = dlopen(cryptoName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h->crypto == nullptr) {
    WARN("%s: %s could not be loaded (%s): %s", caller, cryptoName.c_str(), dlerrorText(), hint);
    return ncclSystemError;
  }
  for (const Symbol& s : symbolsOf(api)) {
    void* handle = s.lib == Lib::kCrypto ? h->crypto : h->ssl;
    *s.slot = dlsym(handle, s.name);
    if (*s.slot == nullptr) {
      WARN("%s: %s has no %s (%s): TLS needs OpenSSL 3", caller, (s.lib == Lib::kCrypto ? cryptoName : sslName).c_str(),
           s.name, dlerrorText());
      return ncclSystemError;
    }
  }
  if (api->OPENSSL_init_ssl(0, nullptr) != 1) {
    WARN("%s: OpenSSL's initialization (OPENSSL_init_ssl) failed", caller);
    return ncclSystemError;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t load(const char* caller, const Api** out) {
  static std::mutex mutex;
  static Api api{};
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) {
    Api candidate{};
    Handles handles;
    const ncclResult_t r = openLibraries(caller, &candidate, &handles);
    if (r != ncclSuccess) return r;
    // Loaded for good: OpenSSL's objects live until the process exits.
    handles.crypto = nullptr;
    handles.ssl = nullptr;
    api = candidate;
    loaded = true;
    INFO(kLogInit | kLogNet, "TLS: loaded %s", api.OpenSSL_version(0));
  }
  *out = &api;
  return ncclSuccess;
}

const char* lastErrorText(const Api& api, char* buffer, size_t bytes) {
  if (bytes == 0) return buffer;
  buffer[0] = '\0';
  const unsigned long first = api.ERR_get_error();
  if (first != 0) api.ERR_error_string_n(first, buffer, bytes);
  api.ERR_clear_error();
  return buffer;
}

}  // namespace braid::ossl
