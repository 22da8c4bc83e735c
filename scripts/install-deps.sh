#!/usr/bin/env bash
# Installs what devicearray needs to build and test, idempotently: Debian/Ubuntu
# packages that are missing (apt-get), and the Python tools in a virtual
# environment under the build tree. Safe to run repeatedly; does nothing when
# everything is present. DEVICEARRAY_SKIP_APT=1 skips the apt step (machines
# without a package registry).
set -euo pipefail

# `install-deps.sh demo` installs only what the library and the command need (the
# first run of `make demo`); without an argument, everything the tests, benchmarks,
# interop, Python package and docs need too.
packages=(
  cmake ninja-build g++ pkg-config
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers
  libpng-dev libcli11-dev
)
if [ "${1:-all}" != "demo" ]; then
  packages+=(
    clinfo
    libgtest-dev libgmock-dev libbenchmark-dev libdlpack-dev
    python3-venv python3-dev
    libopencv-dev
    doxygen
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ] && [ "${DEVICEARRAY_SKIP_APT:-0}" != "1" ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
