#!/usr/bin/env bash
# LAZ end to end on the lent GPU machine (issue #36): copies of one layered LAZ tile in the page
# cache -> GeoTIFF, the host's limits measured in the same run, `--device cpu|gpu|auto` of one or
# two builds alternating, every output compared with `--device cpu`'s.
#   tar xJf .devpack/pack.tar.xz -C /tmp && source /tmp/pack/env.sh && TILE=... scripts/gpu_laz.sh
# TILE (a LAZ file), POINTS (default 1e9: that many points' worth of copies), SHIFT (1: copies side
# by side, scripts/laz_copies.py --shift; default 0: all on one tile's ground, as issue #36's table),
# RES (default 1), RUNS (3, after a warm-up), OLD (an earlier heightgrid, alternating), VARIANTS
# (';'-separated option sets, default the three devices), BENCH ("THREADS..." for laz_gpu_bench on
# 2000 of the copies: the decode kernel alone at those chunks at once; empty: none).
# Logs go to $OUT (or /tmp/gpu_out).
set -u
out=${OUT:-/tmp/gpu_out}; mkdir -p "$out"
work=/tmp/hg_laz; mkdir -p "$work"
runs=${RUNS:-3}
res=${RES:-1}
new=$(command -v heightgrid)
IFS=';' read -r -a variants <<< "${VARIANTS:---device cpu;--device gpu;--device auto}"
status=0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }

tile=${TILE:?TILE: a layered LAZ file}
tile_points=$(heightgrid info "$tile" 2>/dev/null | sed -n 's/.*header point count: \([0-9,]*\).*/\1/p' | tr -d ,)
points=$(python3 -c "print(int(float('${POINTS:-1e9}')))")
copies=$(( (points + tile_points - 1) / tile_points ))
dir=$work/copies_${copies}_${SHIFT:-0}
if [[ ! -d $dir ]]; then
  rm -rf "$work"/copies_*
  # shellcheck disable=SC2046
  python3 "$here/laz_copies.py" "$tile" "$dir" --copies "$copies" $([[ ${SHIFT:-0} == 1 ]] && echo --shift) || exit 1
fi
cat "$dir"/*.laz > /dev/null  # into the page cache
echo "=== $copies copies of $(basename "$tile") ($tile_points points each: $(( copies * tile_points )) points, $(du -sh "$dir" | cut -f1)), --res $res"
# The limits: the page cache read by 16 processes (the copies are small files), and the device's.
t0=$(date +%s.%N); find "$dir" -name '*.laz' -print0 | xargs -0 -P 16 -n 64 cat > /dev/null; t1=$(date +%s.%N)
echo "page-cache read of the copies on 16 processes: $(python3 -c "print(f'{$(du -sb "$dir" | cut -f1) / ($t1 - $t0) / 1e9:.1f}')") GB/s"
heightgrid limits "$dir/tile_00000.laz" 2>&1 | grep -E 'pinned|device read|start' | sed 's/^heightgrid: info: //'

if [[ -n ${BENCH:-} ]]; then
  mapfile -t some < <(ls "$dir"/*.laz | head -2000)
  for t in $BENCH; do
    echo "=== laz_gpu_bench --threads $t (${#some[@]} files)"
    laz_gpu_bench --threads "$t" --reps 3 "${some[@]}" 2>&1 | tail -2
  done
fi

for v in "${variants[@]}"; do
  sides=(new); [[ -n ${OLD:-} ]] && sides=(old new)
  declare -A walls=() rss=()
  for side in "${sides[@]}"; do
    exe=$new; [[ $side == old ]] && exe=$OLD
    # shellcheck disable=SC2086
    "$exe" grid "$dir" -o "$work/w.tif" --overwrite --res "$res" $v -q > /dev/null 2>&1
  done
  for _ in $(seq "$runs"); do
    for side in "${sides[@]}"; do
      exe=$new; [[ $side == old ]] && exe=$OLD
      # shellcheck disable=SC2086
      /usr/bin/time -f "%e %M" -o "$work/t" "$exe" grid "$dir" -o "$work/$side.tif" --overwrite --res "$res" $v -v \
        > "$work/$side.log" 2>&1 || { echo "FAIL $side $v"; tail -5 "$work/$side.log"; status=1; }
      read -r w m < "$work/t"; walls[$side]+="$w "; rss[$side]=$m
    done
  done
  tag=$(echo "$v" | tr -c 'a-z0-9\n' '_' | tr -s '_')
  for side in "${sides[@]}"; do
    # shellcheck disable=SC2086
    echo "$side $v: wall ${walls[$side]}s (median $(median ${walls[$side]})), RSS $(( ${rss[$side]} / 1024 )) MiB"
    cp "$work/$side.log" "$out/laz_${side}${tag}.log" 2>/dev/null
    grep -E 'route|GPU|read:|bottleneck|total' "$work/$side.log" | sed 's/^heightgrid: //' | cut -c1-420 | head -12
  done
  if [[ ${#sides[@]} == 2 ]]; then
    cmp -s "$work/old.tif" "$work/new.tif" && echo "outputs identical" || { echo "FAIL: outputs differ ($v)"; status=1; }
  fi
  cp "$work/new.tif" "$work/ref${tag}.tif"
done
ref=$work/ref_device_cpu.tif
if [[ -f $ref ]]; then
  for f in "$work"/ref_*.tif; do cmp -s "$ref" "$f" || { echo "FAIL: $(basename "$f") differs from $(basename "$ref")"; status=1; }; done
  echo "outputs of every variant compared with --device cpu's"
fi
exit $status
