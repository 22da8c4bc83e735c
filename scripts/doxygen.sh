#!/usr/bin/env bash
# Builds the API reference (Doxygen over include/devicearray/) and fails on any
# warning, including an undocumented public symbol.
#
#   scripts/doxygen.sh [OUTPUT_DIR]        (default: build/docs/api)
#
# The HTML lands in OUTPUT_DIR/html/index.html. Needs doxygen (Debian package
# `doxygen`, installed by scripts/install-deps.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/docs/api}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

if ! command -v doxygen >/dev/null; then
  echo "doxygen.sh: doxygen is not installed (apt-get install doxygen, or scripts/install-deps.sh)" >&2
  exit 2
fi

mkdir -p "$out"
log="$out/doxygen-warnings.log"
cd "$root"
# Doxygen resolves INPUT relative to the working directory (the repository root)
# and reads the output folder from the environment.
status=0
DEVICEARRAY_DOXYGEN_OUTPUT="$out" doxygen docs/Doxyfile >/dev/null 2>"$log" || status=$?
if [ "$status" -ne 0 ] || [ -s "$log" ]; then
  cat "$log" >&2
  echo "doxygen.sh: $(grep -c . "$log" || true) warning line(s); the API reference must build without warnings" >&2
  exit 1
fi
echo "doxygen.sh: API reference in $out/html/index.html (no warnings)"
