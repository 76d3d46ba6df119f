#!/usr/bin/env bash
# LAS end to end on the lent GPU machine (issue #36): files in the page cache -> GeoTIFF, the
# host's limits measured in the same run, `--device cpu|gpu|auto` of one or two builds alternating.
#   tar xJf .devpack/pack.tar.xz -C /tmp && source /tmp/pack/env.sh && scripts/gpu_las.sh
# SIZES (default "1e8 1e9"), RUNS (3, after a warm-up), OLD (an earlier heightgrid to compare in the
# same run; empty: none), VARIANTS (';'-separated option sets, default the three devices),
# VERBOSE (1: keep the -v report of each side's last run). Logs go to $OUT (or /tmp/gpu_out).
set -u
out=${OUT:-/tmp/gpu_out}; mkdir -p "$out"
work=/tmp/hg_work; mkdir -p "$work"
runs=${RUNS:-3}
new=$(command -v heightgrid)
IFS=';' read -r -a variants <<< "${VARIANTS:---device cpu;--device gpu;--device auto}"
status=0

median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }

for size in ${SIZES:-1e8 1e9}; do
  n=$(python3 -c "print(int(float('$size')))" 2>/dev/null || awk "BEGIN{printf \"%d\", $size}")
  las=$work/l$n.las
  if [[ ! -f $las ]]; then
    echo "=== synth lidar --points $n"
    /usr/bin/time -f "%e s" heightgrid synth lidar --points "$n" -o "$las" -q || { echo "FAIL synth"; exit 1; }
  fi
  cat "$las" > /dev/null  # into the page cache
  echo "=== limits ($size points, $(du -h "$las" | cut -f1))"
  heightgrid limits "$las" 2>&1 | grep -E 'page-cache|pinned|device read|start' | sed 's/^heightgrid: info: //'
  for v in "${variants[@]}"; do
    sides=(new); [[ -n ${OLD:-} ]] && sides=(old new)
    declare -A walls=() rss=()
    for side in "${sides[@]}"; do
      exe=$new; [[ $side == old ]] && exe=$OLD
      # shellcheck disable=SC2086
      "$exe" grid "$las" -o "$work/w.tif" --overwrite --res 1 $v -q > /dev/null 2>&1
    done
    for _ in $(seq "$runs"); do
      for side in "${sides[@]}"; do
        exe=$new; [[ $side == old ]] && exe=$OLD
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %M" -o "$work/t" "$exe" grid "$las" -o "$work/$side.tif" --overwrite --res 1 $v -v \
          > "$work/$side.log" 2>&1 || { echo "FAIL $side $v"; tail -5 "$work/$side.log"; status=1; }
        read -r w m < "$work/t"; walls[$side]+="$w "; rss[$side]=$m
      done
    done
    tag=$(echo "$v" | tr -c 'a-z0-9\n' '_' | tr -s '_')
    for side in "${sides[@]}"; do
      # shellcheck disable=SC2086
      echo "$size $side $v: wall ${walls[$side]}s (median $(median ${walls[$side]})), RSS $(( ${rss[$side]} / 1024 )) MiB"
      cp "$work/$side.log" "$out/v_${size}_${side}${tag}.log" 2>/dev/null
      [[ ${VERBOSE:-1} == 1 ]] && grep -E 'route|GPU|read|bound|total|LAS' "$work/$side.log" | sed 's/^heightgrid: //' | cut -c1-330 | head -14
    done
    if [[ ${#sides[@]} == 2 ]]; then
      cmp -s "$work/old.tif" "$work/new.tif" && echo "outputs identical" || { echo "FAIL: outputs differ ($v)"; status=1; }
    fi
    cp "$work/new.tif" "$work/ref_${n}${tag}.tif"
  done
  # Every variant's output of the new build byte-identical to --device cpu's.
  ref=$(ls "$work"/ref_"${n}"_device_cpu.tif 2>/dev/null | head -1)
  if [[ -n $ref ]]; then
    for f in "$work"/ref_"${n}"_*.tif; do cmp -s "$ref" "$f" || { echo "FAIL: $(basename "$f") differs from $(basename "$ref")"; status=1; }; done
    echo "$size: every variant's GeoTIFF compared with --device cpu's"
  fi
  [[ ${KEEP:-1} == 0 ]] && rm -f "$las"
done
exit $status
