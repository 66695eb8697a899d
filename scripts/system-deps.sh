#!/usr/bin/env bash
# Installs the Debian packages the end-to-end tests use (sshd for remote
# collection, chromium for the HTML report, qemu-user-static and the aarch64
# cross compiler for the aarch64 runs), when missing and when
# we may (root with apt). Prints what it did; never fails the build on its own:
# the tests that need a package say clearly what is missing.
set -u
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server openssh-client)
command -v chromium >/dev/null || need+=(chromium)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
if [ ${#need[@]} -eq 0 ]; then
  echo "system-deps: nothing to install"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "system-deps: installing ${need[*]}"
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "system-deps: please install ${need[*]} (not root or no apt-get)"
fi
