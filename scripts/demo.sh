#!/usr/bin/env bash
# The main job on the bundled sample: grid data/sample.xyz and show what came out.
set -euo pipefail
build=${1:-build}
out=$build/demo
mkdir -p "$out"
exe=$build/app/heightgrid
echo "== heightgrid info data/sample.xyz"
"$exe" info data/sample.xyz --res 1
echo
echo "== heightgrid grid data/sample.xyz -o $out/sample_range.tif --res 1 --metrics range,min,max,count"
"$exe" grid data/sample.xyz -o "$out/sample_range.tif" --res 1 --metrics range,min,max,count \
  --a_srs EPSG:32633 --overwrite
echo
echo "== the GeoTIFF: $out/sample_range.tif"
if command -v gdalinfo >/dev/null; then
  gdalinfo -nomd "$out/sample_range.tif" | grep -E '^(Size is|Origin|Pixel Size|PROJCRS)|^Band|Description|NoData' || true
  echo "range band values (row by row; nan = empty cell):"
  gdal_translate -q -of AAIGrid -b 1 "$out/sample_range.tif" /vsistdout/ | awk 'NR > 6 && !/PROJCS/'
  echo "expected (data/README.md):"
  printf ' 2.5 0 nan\n 0.5 2.5 2.25\n'
fi
