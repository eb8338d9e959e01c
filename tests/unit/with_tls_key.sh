#!/bin/sh
# Runs a test binary (with its arguments) with every TCP connection of Braid's encrypted: a fresh
# pre-shared key in an owner-only file that BRAID_ENCRYPTION_PSK_FILE names. Exits 77 (ctest:
# skipped) where OpenSSL 3's libssl.so.3 is not installed.
set -eu
if ! { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q 'libssl\.so\.3 '; then
  echo "libssl.so.3 (OpenSSL 3) is not on this machine: the suite is not run over TLS"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
umask 077
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/psk"
BRAID_ENCRYPTION_PSK_FILE="$dir/psk" "$@"
