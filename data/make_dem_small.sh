#!/usr/bin/env bash
# Regenerates data/dem_small.tif: an 8 x 6 Float32 DEM, 10 m pixels, EPSG:32633, one nodata pixel.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
cat > "$tmp/dem.asc" <<'ASC'
ncols 8
nrows 6
xllcorner 500000
yllcorner 4100000
cellsize 10
NODATA_value -9999
100 101 102 103 104 105 106 107
101 102 103 104 105 106 107 108
102 103 104 -9999 106 107 108 109
103 104 105 106 107 108 109 110
104 105 106 107 108 109 110 111
105 106 107 108 109 110 111 112.5
ASC
gdal_translate -q -ot Float32 -a_srs EPSG:32633 -co TILED=NO -co COMPRESS=DEFLATE "$tmp/dem.asc" dem_small.tif
rm -rf "$tmp"
