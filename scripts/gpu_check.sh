#!/usr/bin/env bash
# GPU verification and timings, run on the lent GPU machine from a device pack:
#   tar xJf .devpack/pack.tar.xz -C /tmp && source /tmp/pack/env.sh && scripts/gpu_check.sh PART
# PART: tests | sanitize | equal | bench | all. Logs go to $OUT (or /tmp/gpu_out).
set -u
out=${OUT:-/tmp/gpu_out}; mkdir -p "$out"
extra=/tmp/pack/extra
export HEIGHTGRID_DATA_DIR=$extra/data HEIGHTGRID_REAL_DATA_DIR=$extra/real HEIGHTGRID_EXE=$(command -v heightgrid)
part=${1:-all}
work=/tmp/hg_work; mkdir -p "$work"

step() { echo; echo "=== $*"; }

if [[ $part == tests || $part == all ]]; then
  step "device"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  step "kernels_tests"; kernels_tests 2>&1 | tee "$out/kernels_tests.log" | grep -E '^\[  (PASSED|FAILED|  SKIPPED)|FAILED|tests ran'
  step "app_tests (CLI end to end, --device auto = GPU here)"; app_tests 2>&1 | tee "$out/app_tests.log" | grep -E '^\[  (PASSED|FAILED)|FAILED|tests ran'
fi

if [[ $part == sanitize || $part == all ]]; then
  step "compute-sanitizer memcheck"
  timeout 300 compute-sanitizer --tool memcheck --report-api-errors no kernels_tests --gtest_filter='-*OutOfMemory*' \
    > "$out/memcheck.log" 2>&1; echo "rc=$?"; grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tail -3
  step "compute-sanitizer racecheck"
  timeout 300 compute-sanitizer --tool racecheck --report-api-errors no kernels_tests --gtest_filter='*Reduce*:-*OutOfMemory*' \
    > "$out/racecheck.log" 2>&1; echo "rc=$?"; grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$out/racecheck.log" | tail -3
fi

if [[ $part == equal || $part == all ]]; then
  step "GeoTIFFs from --device gpu (every mode, both CSR methods) byte-identical to --device cpu"
  inputs=("$HEIGHTGRID_DATA_DIR/sample.xyz:1" "$HEIGHTGRID_DATA_DIR/dem_small.tif:20")
  while IFS= read -r f; do inputs+=("$f:1"); done < <(find "$HEIGHTGRID_REAL_DATA_DIR" -name "*.las" | sort)
  inputs+=("synth:0.5")
  fails=0
  for spec in "${inputs[@]}"; do
    f=${spec%:*}; res=${spec##*:}
    if [[ $f == synth ]]; then src=(--synth uniform --points 20000000 --synth-extent 0 0 2000 2000); name=synth20M
    else src=("$f"); name=$(basename "$f"); fi
    common=(--res "$res" --metrics range,min,max,count -q --overwrite)
    heightgrid grid "${src[@]}" -o "$work/cpu.tif" --device cpu "${common[@]}" || { echo "FAIL cpu $name"; fails=$((fails+1)); continue; }
    line="$name:"
    for m in thread warp cub hybrid atomic; do for c in radix_sort counting; do
      heightgrid grid "${src[@]}" -o "$work/gpu.tif" --device gpu --mode $m --csr $c "${common[@]}" \
        && cmp -s "$work/cpu.tif" "$work/gpu.tif" && line+=" $m/$c=same" || { line+=" $m/$c=DIFFERENT"; fails=$((fails+1)); }
    done; done
    echo "$line"
  done
  echo "byte-comparison failures: $fails"
fi

if [[ $part == bench || $part == all ]]; then
  for spec in "100000000:3162:1" "1000000000:10000:1"; do
    IFS=: read -r n side res <<< "$spec"
    for m in thread warp cub hybrid atomic; do for c in radix_sort counting; do
      step "grid --synth uniform --points $n (extent $side m, --res $res) --mode $m --csr $c --repeat 5"
      heightgrid grid --synth uniform --points "$n" --synth-extent 0 0 "$side" "$side" --res "$res" \
        -o "$work/b.tif" --overwrite --device gpu --mode $m --csr $c --repeat 5 -v --co COMPRESS=NONE 2>&1 \
        | grep -E 'GPU \(|reduce moved|points read|error'
    done; done
  done
  step "CPU backend, 10^8 points, $(nproc) threads"
  heightgrid grid --synth uniform --points 100000000 --synth-extent 0 0 3162 3162 --res 1 -o "$work/c.tif" \
    --overwrite --device cpu -v --co COMPRESS=NONE 2>&1 | grep -E 'CPU|points read'
fi
