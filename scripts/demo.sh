#!/usr/bin/env bash
# The devicearray demo (`make demo`; usage: scripts/demo.sh [BUILD_DIR]).
#
# On the default device (DEVICEARRAY_BACKEND / DEVICEARRAY_DEVICE choose another):
#   1. lists the devices,
#   2. synthesizes a scene as a 3-D camera sees it (1920 x 1200 on a GPU; 640 x 400 on
#      a CPU OpenCL device such as PoCL, so that the demo takes seconds there),
#   3. runs the point-cloud pipeline on it: 2x2 downsample, normals, a rigid transform
#      into a frame looking straight down from 2.5 m above the floor, an oriented-box ROI
#      that keeps what stands on the floor (and drops the floor), then unorganize and a
#      voxel grid — printing the GPU time of every stage,
#   4. renders input and output (colour | depth | normals) to PNG files.
# DEVICEARRAY_DEMO_SIZE=HxW overrides the scene size.
set -euo pipefail

build="${1:-build}"
cli="$build/tools/devicearray"
if [[ ! -x "$cli" ]]; then
  echo "demo: $cli is missing: build the devicearray command first (it needs CLI11; DEVICEARRAY_BUILD_TOOLS=ON)" >&2
  exit 1
fi
out="$build/demo"
mkdir -p "$out"

echo "== devicearray info"
info="$("$cli" info)"
echo "$info"

# The default device is the first row of `info` unless the environment picks another.
# CPU devices are recognized by their OpenCL model name (PoCL: "pthread-..." or "cpu-...";
# vendor CPU runtimes: the processor's name).
size="${DEVICEARRAY_DEMO_SIZE:-}"
if [[ -z "$size" ]]; then
  if [[ -n "${DEVICEARRAY_BACKEND:-}" ]]; then
    row="$(awk -v want="${DEVICEARRAY_BACKEND}:${DEVICEARRAY_DEVICE:-0}" 'NR > 1 && $2 == want' <<<"$info")"
  else
    row="$(awk 'NR == 2' <<<"$info")"
  fi
  if [[ "$row" != *" cuda:"* ]] && grep -qiE 'pthread|(^|[^a-z])cpu|xeon|epyc|ryzen|core\(tm\)' <<<"$row"; then
    size=400x640
  else
    size=1200x1920
  fi
fi
height="${size%%x*}"
width="${size##*x}"

echo
echo "== devicearray synth ($height x $width)"
"$cli" synth -H "$height" -W "$width" -o "$out/scene.ply"

# Camera frame -> top-down frame (x right, y towards the camera, z down; the floor at
# z = 2500 mm), and a box on the floor from 20 mm to 1.5 m high in that frame.
transform="1,0,0,0, 0,0.6459422,-0.7633862,1500, 0,0.7633862,0.6459422,1400, 0,0,0,1"
roi="-2000,-2000,0, 2000,-2000,0, -2000,2000,0, 1000,2480"

echo
echo "== devicearray process"
"$cli" process "$out/scene.ply" --downsample 2x2 --normals --transform "$transform" --roi "$roi" \
  --unorganize --voxel 8 -o "$out/processed.ply"

echo
echo "== devicearray render"
"$cli" render "$out/scene.ply" --view all -o "$out/scene.png"
"$cli" render "$out/processed.ply" --view all -o "$out/processed.png"

echo
echo "Done. Files:"
echo "  $out/scene.ply      synthetic organized cloud ($height x $width, colours, SNR)"
echo "  $out/processed.ply  the objects on the floor, seen from above (unorganized, voxel 8 mm, normals)"
echo "  $out/scene.png      colour | depth | normals of the scene, as the camera sees it"
echo "  $out/processed.png  colour | depth | normals of the processed cloud, from above"
