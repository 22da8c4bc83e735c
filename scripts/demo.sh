#!/usr/bin/env bash
# Runs the demo on the default device (CUDA when present, else OpenCL/PoCL).
set -euo pipefail
build="${1:-build}"
"$build/examples/device_tour"
