#!/usr/bin/env bash
# Installs the build into a prefix under it and builds and runs tests/consumer against
# that installed tree with find_package(devicearray CONFIG REQUIRED), as a user would.
#   scripts/consumer-test.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
prefix="$build/consumer/prefix"
rm -rf "$build/consumer"
cmake --install "$build" --prefix "$prefix" > "$build/consumer-install.log"
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
cmake -S "$root/tests/consumer" -B "$build/consumer/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$build/consumer/build" > /dev/null
"$build/consumer/build/consumer"
