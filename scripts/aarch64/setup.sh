#!/usr/bin/env bash
# Sets up an arm64 CPython 3.11 that runs here under qemu-user, from Debian's packages and the package
# registry's manylinux aarch64 wheels, cached in $NPUPROF_AARCH64_CACHE (default ~/.cache/npuprof-aarch64):
#   ROOT/    Debian's arm64 python3.11 and the libraries it loads (dpkg -x), plus bin/pyw, the interpreter
#            as tests start it (sys.executable), which re-enters qemu for child processes
#   SITE/    numpy and the other dependencies, pytest and hypothesis for the tests (wheels unzipped: the
#            host's pip does not install foreign wheels)
#   TOOLS/   pip, setuptools and wheel for installing npuprof with the arm64 interpreter itself
# Nothing is downloaded when the cache already holds it. Needs root with apt-get for the host tools
# (qemu-user-static, gcc-aarch64-linux-gnu) and the arm64 package index; exits 1 with the reason otherwise.
# Prints the cache directory on its last line.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${NPUPROF_AARCH64_CACHE:-$HOME/.cache/npuprof-aarch64}"
HOST_PY="${HOST_PY:-python3}"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9   # one setup at a time (two test runs may start it together)

say() { echo "aarch64 setup: $*" >&2; }
fail() { say "$*"; exit 1; }

# -- host tools ---------------------------------------------------------------------------------------
need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || fail "needs ${need[*]} (apt-get install ${need[*]}; not root or no apt-get here)"
  say "installing ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# -- the arm64 root ------------------------------------------------------------------------------------
RUNTIME_DEBS=(python3.11 python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libc6 libexpat1 zlib1g
  libffi8 libssl3 libsqlite3-0 libbz2-1.0 liblzma5 libncursesw6 libreadline8 libtinfo6 libuuid1 libgcc-s1
  libstdc++6 libcrypt1 libnsl2 libtirpc3 libdb5.3 libgdbm6 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libcom-err2 libkrb5support0 libkeyutils1)
BUILD_DEBS=(libpython3.11-dev python3.11-dev libc6-dev linux-libc-dev libcrypt-dev)
ROOT="$CACHE/root"
if [ ! -f "$ROOT/.complete" ]; then
  command -v dpkg >/dev/null && command -v apt-get >/dev/null || fail "needs dpkg and apt-get for Debian's arm64 packages"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    [ "$(id -u)" = 0 ] || fail "needs root once to add the arm64 architecture (dpkg --add-architecture arm64)"
    dpkg --add-architecture arm64
    apt-get update -qq >/dev/null
  fi
  mkdir -p "$CACHE/debs" && cd "$CACHE/debs"
  missing=()
  for p in "${RUNTIME_DEBS[@]}" "${BUILD_DEBS[@]}"; do ls "${p}"_*_arm64.deb >/dev/null 2>&1 || missing+=("$p:arm64"); done
  if [ ${#missing[@]} -gt 0 ]; then
    say "downloading ${#missing[@]} Debian arm64 packages"
    apt-get download -qq "${missing[@]}" 2>/dev/null || { apt-get update -qq >/dev/null; apt-get download -qq "${missing[@]}"; }
  fi
  rm -rf "$ROOT.tmp" && mkdir -p "$ROOT.tmp"
  for deb in ./*_arm64.deb; do dpkg -x "$deb" "$ROOT.tmp"; done
  rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT" && touch "$ROOT/.complete"
fi
mkdir -p "$ROOT/bin"
# The interpreter as tests and subprocesses start it: qemu's -0 sets argv[0] to this script, so Python
# reports it as sys.executable and every child process re-enters qemu (no binfmt_misc registration is
# needed, nor made). NPUPROF_QEMU_PAGE (4096 or 65536) picks the page size.
cat > "$ROOT/bin/pyw" <<PYW
#!/bin/sh
exec qemu-aarch64-static -p "\${NPUPROF_QEMU_PAGE:-4096}" -L "$ROOT" -0 "$ROOT/bin/pyw" "$ROOT/usr/bin/python3.11" "\$@"
PYW
chmod +x "$ROOT/bin/pyw"

# -- wheels ---------------------------------------------------------------------------------------------
# the versions the host's environment has, so both run the same numpy, orjson, ... (byte-identical outputs)
# the extras analysis uses without a framework: pyarrow (Parquet tables of the report), msgspec (trace reading)
RUN_WHEELS=(numpy orjson pluggy rich markdown-it-py mdurl pygments pyarrow msgspec)
TEST_WHEELS=(pytest iniconfig packaging hypothesis sortedcontainers pytest-timeout)
TOOL_WHEELS=(pip setuptools wheel)
pins=$("$HOST_PY" "$HERE/pins.py" "${RUN_WHEELS[@]}" "${TEST_WHEELS[@]}")
SITE="$CACHE/site" TOOLS="$CACHE/tools"
if [ ! -f "$SITE/.pins" ] || [ "$(cat "$SITE/.pins")" != "$pins" ] || [ ! -f "$TOOLS/.complete" ]; then
  mkdir -p "$CACHE/wheels"
  say "downloading wheels: $pins"
  # shellcheck disable=SC2086
  "$HOST_PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 \
    -d "$CACHE/wheels" $pins
  "$HOST_PY" -m pip download -q --no-deps --only-binary=:all: -d "$CACHE/wheels/tools" "setuptools>=77" "${TOOL_WHEELS[@]}"
  rm -rf "$SITE.tmp" "$TOOLS.tmp" && mkdir -p "$SITE.tmp" "$TOOLS.tmp"
  for spec in $pins; do
    name="${spec%%==*}" version="${spec#*==}"
    wheel=$(ls "$CACHE/wheels/" | "$HOST_PY" "$HERE/pins.py" --pick "$name" "$version")
    "$HOST_PY" -m zipfile -e "$CACHE/wheels/$wheel" "$SITE.tmp"
  done
  for wheel in "$CACHE"/wheels/tools/*.whl; do "$HOST_PY" -m zipfile -e "$wheel" "$TOOLS.tmp"; done
  echo "$pins" > "$SITE.tmp/.pins" && touch "$TOOLS.tmp/.complete"
  rm -rf "$SITE" "$TOOLS" && mv "$SITE.tmp" "$SITE" && mv "$TOOLS.tmp" "$TOOLS"
fi
echo "$CACHE"
