#!/usr/bin/env bash
# GPU verification and timings, run on the lent GPU machine from a device pack:
#   tar xJf .devpack/pack.tar.xz -C /tmp && source /tmp/pack/env.sh && scripts/gpu_check.sh PART
# PART: tests | sanitize | equal | bench | all, or (run alone) ladder | sanitize2 | sweep | compare8 |
# compare9 (KINDS="skewed clustered" picks the kinds) | sums | torch | pipeline | real (REPEAT=20, MODES=thread,warp,hybrid
# picks the modes, COMPARE_ARGS=--no-gate adds options) | ncu (KINDS, POINTS) | ncu_source (KIND, KERNEL, MODES). sweep takes SWEEP_ARGS. Logs go to $OUT (or /tmp/gpu_out).
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

if [[ $part == ladder ]]; then
  step "bench-reduce (issue #6)"
  heightgrid bench-reduce --sizes 17..28 --types int32,float,double --ops sum,max --kernels 1-10 \
    --repeat 20 --cpu-repeat 1 --accuracy --accuracy-sizes 10..28 --json "$out/bench_reduce.json" --overwrite \
    > "$out/bench_reduce.txt" 2>&1; echo "rc=$?"; grep -iE 'verdict|meets|MISSES|WRONG' "$out/bench_reduce.txt" | head -20
fi

if [[ $part == sanitize2 ]]; then
  step "memcheck: hybrid, atomic, ladder"
  timeout 200 compute-sanitizer --tool memcheck --report-api-errors no kernels_tests \
    --gtest_filter='*hybrid*:*Hybrid*:*atomic*:*Atomic*:*Ladder*:*StreamGate*:-*OutOfMemory*' > "$out/memcheck2.log" 2>&1
  echo "rc=$?"; grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck2.log" | tail -3
  step "racecheck: hybrid, ladder kernels 5-7"
  timeout 300 compute-sanitizer --tool racecheck --report-api-errors no kernels_tests \
    --gtest_filter='*Hybrid*:AllModes/ReduceMode.*/hybrid:*Ladder.Matches*/k5_*:*Ladder.Matches*/k6_*:*Ladder.Matches*/k7_*' \
    > "$out/racecheck2.log" 2>&1
  echo "rc=$?"; grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$out/racecheck2.log" | tail -3
fi

if [[ $part == sweep ]]; then
  step "hybrid threshold sweep, 10^8"
  hybrid_sweep --points 1e8 ${SWEEP_ARGS:-} > "$out/sweep_1e8.md" 2>&1; echo "rc=$?"; tail -30 "$out/sweep_1e8.md"
fi

if [[ $part == compare8 ]]; then
  for k in uniform lidar skewed clustered; do
    step "compare --synth $k --points 1e8"
    heightgrid compare --synth $k --points 100000000 --res 1 --repeat 10 --json "$out/cmp_${k}_1e8.json" --overwrite \
      > "$out/cmp_${k}_1e8.txt" 2>&1; echo "rc=$?"; grep -E '^(thread|warp|cub|hybrid|atomic|cpu) |identical|DIFFER' "$out/cmp_${k}_1e8.txt"
  done
fi

if [[ $part == sums ]]; then
  : > "$out/cmp_sums_1e8.txt"
  for k in uniform lidar skewed clustered; do
    step "compare --synth $k --points 1e8 --metrics range,mean,stddev"
    echo "=== $k" >> "$out/cmp_sums_1e8.txt"
    heightgrid compare --synth $k --points 100000000 --res 1 --repeat 10 --metrics range,mean,stddev \
      --modes thread,warp,hybrid >> "$out/cmp_sums_1e8.txt" 2>&1; echo "rc=$?"
  done
  grep -E '^===|^(thread|warp|hybrid) |identical|DIFFER' "$out/cmp_sums_1e8.txt"
fi

if [[ $part == compare9 ]]; then
  for k in ${KINDS:-uniform lidar}; do
    step "compare --synth $k --points 1e9"
    heightgrid compare --synth $k --points 1000000000 --res 1 --repeat 5 ${MODES:+--modes "$MODES"} --json "$out/cmp_${k}_1e9.json" --overwrite \
      > "$out/cmp_${k}_1e9.txt" 2>&1; echo "rc=$?"; grep -E '^(thread|warp|cub|hybrid|atomic|cpu) |identical|DIFFER' "$out/cmp_${k}_1e9.txt"
  done
fi

if [[ $part == torch ]]; then
  step "PyTorch scatter_reduce vs heightgrid's device pipeline, 10^8 points, ~10 per cell (issue #7)"
  python3 scripts/torch_scatter_baseline.py --points 1e8 --side 3162 --repeat 10 --modes hybrid,thread,warp,atomic \
    --workdir "$work" > "$out/torch_1e8.txt" 2>&1; echo "rc=$?"; cat "$out/torch_1e8.txt" | tail -40
fi

if [[ $part == pipeline ]]; then
  for k in uniform lidar skewed clustered; do
    step "device pipeline (cell ids + CSR + reduce), --synth $k --points 1e8 --mode auto --repeat 10"
    heightgrid grid --synth $k --points 100000000 --res 1 -o "$work/p.tif" --overwrite --device gpu \
      --metrics range --repeat 10 -v --co COMPRESS=NONE 2>&1 | grep -E 'GPU \(|reduce moved|auto|picked|points read|error'
  done
fi

if [[ $part == real ]]; then
  # Every uncompressed real LAS file, as docs/benchmarks.md's real-file table.
  tag=${TAG:-all}; : > "$out/cmp_real_${tag}.txt"
  while IFS= read -r f; do
    rel=${f#"$HEIGHTGRID_REAL_DATA_DIR"/}
    echo "=== heightgrid compare $rel --res 1 --repeat ${REPEAT:-20}" >> "$out/cmp_real_${tag}.txt"
    heightgrid compare "$f" --res 1 --repeat "${REPEAT:-20}" ${MODES:+--modes "$MODES"} ${COMPARE_ARGS:-} >> "$out/cmp_real_${tag}.txt" 2>&1 \
      || echo "rc=$? for $rel" >> "$out/cmp_real_${tag}.txt"
  done < <(find "$HEIGHTGRID_REAL_DATA_DIR" -name '*.las' | sort)
  grep -E '^===|^(thread|warp|hybrid) |identical|DIFFER|rc=' "$out/cmp_real_${tag}.txt"
  step "hybrid / best of thread, warp (medians)"
  awk '/^===/ {f=$4} /^thread / {t=$3} /^warp / {w=$3} /^hybrid / {b=(t<w?t:w); printf "%-60s %.4f %.4f %.4f %.2fx\n", f, t, w, $3, $3/b}' \
    "$out/cmp_real_${tag}.txt"
fi

if [[ $part == ncu ]]; then
  # Nsight Compute on the reduce kernels of thread and hybrid (KINDS picks the synthetic kinds,
  # POINTS the size): time, DRAM throughput, occupancy and warp stall reasons per kernel.
  for k in ${KINDS:-skewed clustered lidar}; do
    step "ncu: compare --synth $k --points ${POINTS:-100000000} --modes thread,hybrid"
    timeout 280 ncu --clock-control none -k 'regex:reduce_(thread|balanced|warp)' --launch-count ${LAUNCHES:-6} \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
      --section LaunchStats --section SchedulerStats \
      heightgrid compare --synth "$k" --points "${POINTS:-100000000}" --res 1 --repeat 1 --modes thread,hybrid \
      > "$out/ncu_$k.txt" 2>&1; echo "rc=$?"
    grep -E '^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Stall|Warp Cycles Per Issued' "$out/ncu_$k.txt" | head -80
  done
fi

if [[ $part == ncu_source ]]; then
  # Per-instruction execution counts and stall samples of one kernel (KERNEL regex, KIND, POINTS).
  k=${KIND:-skewed}
  step "ncu source counters: ${KERNEL:-reduce_balanced_tile} on --synth $k --points ${POINTS:-100000000}"
  timeout 280 ncu --clock-control none -k "regex:${KERNEL:-reduce_balanced_tile}" --launch-count 1 \
    --section SourceCounters --section InstructionStats --section WarpStateStats --page source --print-source sass --csv \
    heightgrid compare --synth "$k" --points "${POINTS:-100000000}" --res 1 --repeat 1 --modes ${MODES:-hybrid} \
    > "$out/ncu_source_$k.csv" 2>&1; echo "rc=$?"; wc -l "$out/ncu_source_$k.csv"
  timeout 200 ncu --clock-control none -k "regex:${KERNEL:-reduce_balanced_tile}" --launch-count 1 \
    --section SourceCounters --section InstructionStats --section WarpStateStats \
    heightgrid compare --synth "$k" --points "${POINTS:-100000000}" --res 1 --repeat 1 --modes ${MODES:-hybrid} \
    > "$out/ncu_details_$k.txt" 2>&1; echo "rc=$?"
fi
