#!/usr/bin/env bash
# GPU verification and timings, run on the lent GPU machine from a device pack:
#   tar xJf .devpack/pack.tar.xz -C /tmp && source /tmp/pack/env.sh && scripts/gpu_check.sh PART
# PART: tests | sanitize (sanitize_stream: the streaming binner only) | equal | bench (POINTS=1e8 LAS) | all, or (run alone) startup (POINTS, VARIANTS) | ab (OLD, NEW, RUNS, VARIANTS) | crossover (SIZES, DEVICES, RUNS, CROSS_ARGS) | huge | laz (LAZ_WHEELS) | ladder | sanitize2 | sweep | compare8 |
# gpus (SYNTH_POINTS) | mpi | mpi_synth (SYNTH_POINTS) | percentiles (POINTS) | compare9 (KINDS="skewed clustered" picks the kinds) | sums | torch | pipeline | real (REPEAT=20, MODES=thread,warp,hybrid
# picks the modes, COMPARE_ARGS=--no-gate adds options) | ncu (KINDS, POINTS) | ncu_source (KIND, KERNEL, MODES). sweep takes SWEEP_ARGS. Logs go to $OUT (or /tmp/gpu_out).
set -u
out=${OUT:-/tmp/gpu_out}; mkdir -p "$out"
extra=/tmp/pack/extra
export HEIGHTGRID_DATA_DIR=$extra/data HEIGHTGRID_REAL_DATA_DIR=$extra/real HEIGHTGRID_EXE=$(command -v heightgrid)
part=${1:-all}
work=/tmp/hg_work; mkdir -p "$work"

step() { echo; echo "=== $*"; }
# The reduce modes, from the binary's mode table; mode_rows matches a compare table's rows.
modes=$(heightgrid compare --list-modes | paste -sd' ')
mode_rows="^($(echo "$modes" | tr ' ' '|')|cpu) "

# A GPU check fails loudly: every failure is collected here and the script exits 1 at the end,
# naming them (output piped into grep used to hide the exit codes).
failures=()
fail() { failures+=("$*"); echo "FAIL: $*"; }
checked() {  # checked NAME RC: records a failure unless RC is 0
  echo "rc=$2"; (( $2 == 0 )) || fail "$1 exited $2"
}
gtest() {  # gtest NAME EXECUTABLE ARGS...: the summary lines, the full log in $out/NAME.log
  local name=$1; shift
  "$@" > "$out/$name.log" 2>&1; local rc=$?
  grep -E '^\[  (PASSED|FAILED|  SKIPPED)|FAILED|tests ran' "$out/$name.log"
  (( rc == 0 )) || fail "$name exited $rc"
}

if [[ $part == tests || $part == all ]]; then
  step "device"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
  step "kernels_tests"; gtest kernels_tests kernels_tests
  step "ladder_tests (the reduction ladder)"; gtest ladder_tests ladder_tests
  step "app_tests (CLI end to end, --device auto = GPU here)"; gtest app_tests app_tests
  step "pipeline_tests (GPU routes, batch reductions, device bands)"; gtest pipeline_tests pipeline_tests
  step "hostile_tests (hostile inputs, with a GPU present)"; (cd "$work" && gtest hostile_tests hostile_tests)
fi

if [[ $part == sanitize || $part == all ]]; then
  step "compute-sanitizer memcheck"
  timeout 300 compute-sanitizer --error-exitcode 86 --tool memcheck --report-api-errors no kernels_tests --gtest_filter='-*OutOfMemory*' \
    > "$out/memcheck.log" 2>&1; checked memcheck $?; grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tail -3
  step "compute-sanitizer racecheck"
  timeout 300 compute-sanitizer --error-exitcode 86 --tool racecheck --report-api-errors no kernels_tests --gtest_filter='*Reduce*:-*OutOfMemory*' \
    > "$out/racecheck.log" 2>&1; checked racecheck $?; grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$out/racecheck.log" | tail -3
fi

if [[ $part == sanitize || $part == sanitize_stream || $part == all ]]; then
  for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer $tool on the streaming binner (pipeline_tests GPU routes)"
    filter='GridJob.*Gpu*'; [[ $tool == racecheck ]] && filter='GridJob.EveryGpu*'  # racecheck: 15x slower
    timeout 150 compute-sanitizer --error-exitcode 86 --tool $tool --report-api-errors no pipeline_tests --gtest_filter="$filter" \
      > "$out/pipeline_$tool.log" 2>&1; checked "pipeline $tool" $?; grep -E 'SUMMARY|PASSED|FAILED' "$out/pipeline_$tool.log" | tail -3
  done
fi

if [[ $part == equal || $part == all ]]; then
  step "GeoTIFFs from --device gpu (every batch reduction: atomic and the CSR modes) and auto byte-identical to --device cpu"
  inputs=("$HEIGHTGRID_DATA_DIR/sample.xyz:1" "$HEIGHTGRID_DATA_DIR/dem_small.tif:20")
  while IFS= read -r f; do inputs+=("$f:1"); done < <(find "$HEIGHTGRID_REAL_DATA_DIR" -name "*.las" -o -name "*.laz" | sort)
  inputs+=("synth:0.5")
  fails=0
  for spec in "${inputs[@]}"; do
    f=${spec%:*}; res=${spec##*:}
    if [[ $f == synth ]]; then src=(--synth lidar --points 20000000 --synth-extent 0 0 2000 2000); name=synth20M
    else src=("$f"); name=$(basename "$f"); fi
    common=(--res "$res" --metrics range,min,max,count -q --overwrite)
    heightgrid grid "${src[@]}" -o "$work/cpu.tif" --device cpu "${common[@]}" || { echo "FAIL cpu $name"; fails=$((fails+1)); continue; }
    line="$name:"
    for m in $modes auto; do
      heightgrid grid "${src[@]}" -o "$work/gpu.tif" --device gpu --mode $m "${common[@]}" \
        && cmp -s "$work/cpu.tif" "$work/gpu.tif" && line+=" $m=same" || { line+=" $m=DIFFERENT"; fails=$((fails+1)); }
    done
    heightgrid grid "${src[@]}" -o "$work/auto.tif" --device auto "${common[@]}" \
      && cmp -s "$work/cpu.tif" "$work/auto.tif" && line+=" device-auto=same" || { line+=" device-auto=DIFFERENT"; fails=$((fails+1)); }
    echo "$line"
  done
  echo "byte-comparison failures: $fails"
  (( fails == 0 )) || fail "equal: $fails GeoTIFFs differ from --device cpu"
fi

# End to end, files in the page cache -> GeoTIFF on disk: wall (median of 3 after a warm-up) and peak
# RSS, next to the machine's limits measured in the same run (heightgrid limits).
timed() {  # timed LABEL CMD...: prints the wall and RSS of 3 runs after a warm-up, and the -v report of the last
  local label=$1; shift
  "$@" -q > /dev/null 2>&1
  local walls=() rss=0
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" -v > "$work/v.log" 2>&1 || { fail "$label"; tail -3 "$work/v.log"; return; }
    read -r w m < "$work/time"; walls+=("$w"); (( m > rss )) && rss=$m
  done
  local med; med=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
  echo "$label: wall ${walls[*]} s (median $med), peak RSS $((rss / 1024)) MiB"
  grep -E 'points read|read:|GPU |bottleneck|finalize' "$work/v.log" | sed 's/^heightgrid: //' | cut -c1-400
}

if [[ $part == bench || $part == all ]]; then
  n=${POINTS:-100000000}
  las=$work/l$n.las
  [[ -f $las ]] || { step "synth lidar --points $n"; /usr/bin/time -f "%e s" heightgrid synth lidar --points "$n" -o "$las" -q; }
  step "machine limits (same run)"; heightgrid limits "$las" 2>&1 | sed 's/^heightgrid: info: //'
  for d in gpu cpu auto; do
    step "grid $(basename "$las") --res 1 --device $d"
    timed "$d" heightgrid grid "$las" -o "$work/o.tif" --overwrite --res 1 --device $d
  done
fi

# Where a 10^8-point GPU job's fixed costs go: CUDA's start step by step (heightgrid limits), the
# ring of host batches (--chunk-points scales each slot, so the points read ahead while CUDA starts),
# and the GeoTIFF's creation options against the defaults (VARIANTS: extra runs, ";"-separated).
if [[ $part == startup ]]; then
  n=${POINTS:-100000000}
  las=$work/l$n.las
  [[ -f $las ]] || { step "synth lidar --points $n"; /usr/bin/time -f "%e s" heightgrid synth lidar --points "$n" -o "$las" -q; }
  step "machine limits and CUDA's start (same run)"; heightgrid limits "$las" 2>&1 | sed 's/^heightgrid: info: //'
  heightgrid limits 2>&1 | grep -E "CUDA's start" | sed 's/^heightgrid: info: /again: /'
  IFS=';' read -r -a variants <<< "${VARIANTS:---device gpu;--device gpu --chunk-points 1048576;--device gpu --chunk-points 2097152;--device gpu --co PREDICTOR=3 --co ZLEVEL=6;--device cpu;--device cpu --co PREDICTOR=3 --co ZLEVEL=6}"
  for v in "${variants[@]}"; do
    step "grid $(basename "$las") --res 1 $v"
    # shellcheck disable=SC2086
    timed "$v" heightgrid grid "$las" -o "$work/o.tif" --overwrite --res 1 $v
    grep -E 'finalize|stages|GPU' "$work/v.log" | sed 's/^heightgrid: //' | cut -c1-300 | sort -u
  done
fi

if [[ $part == ab ]]; then
  # Two builds on one machine, alternating (lent machines differ by up to 30 %): OLD=path of the
  # earlier heightgrid (e.g. a CPU build of the last commit), NEW (default: heightgrid); RUNS (5),
  # POINTS (1e8), VARIANTS separated by ';' (default: the range, and four bands).
  n=${POINTS:-100000000}; runs=${RUNS:-5}; new=${NEW:-$(command -v heightgrid)}
  las=$work/l$n.las
  [[ -f $las ]] || { step "synth lidar --points $n"; heightgrid synth lidar --points "$n" -o "$las" -q; }
  step "machine limits (same run)"; heightgrid limits "$las" 2>&1 | grep -E 'page-cache|device read|pinned' | sed 's/^heightgrid: info: //'
  IFS=';' read -r -a variants <<< "${VARIANTS:---device cpu;--device cpu --metrics range,min,max,count}"
  for v in "${variants[@]}"; do
    step "A/B: grid $(basename "$las") --res 1 $v, $runs alternating runs after a warm-up each"
    for exe in "$OLD" "$new"; do "$exe" grid "$las" -o "$work/ab.tif" --overwrite --res 1 $v -q 2> /dev/null; done
    declare -A walls=() rss=() parts=()
    for _ in $(seq "$runs"); do
      for side in old new; do
        exe=$OLD; [[ $side == new ]] && exe=$new
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %M" -o "$work/t" "$exe" grid "$las" -o "$work/ab_$side.tif" --overwrite --res 1 $v -v \
          > "$work/ab_$side.log" 2>&1 || fail "ab $side $v"
        read -r w m < "$work/t"; walls[$side]+="$w "; rss[$side]=$m
        parts[$side]+="$(grep -oE 'read \+ bin [0-9.]+ m?s' "$work/ab_$side.log" | head -1 | sed 's/read + bin //'),$(grep -oE 'finalize [0-9.]+ m?s' "$work/ab_$side.log" | sed 's/finalize //') "
      done
    done
    for side in old new; do
      med=$(printf '%s\n' ${walls[$side]} | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
      echo "$side: wall ${walls[$side]}s (median $med), RSS $(( ${rss[$side]} / 1024 )) MiB; read+bin,finalize: ${parts[$side]}"
    done
    cmp -s "$work/ab_old.tif" "$work/ab_new.tif" && echo "outputs byte-identical" || fail "ab: outputs differ ($v)"
    unset walls rss parts
  done
fi

if [[ $part == crossover ]]; then
  step "--device auto crossover: LAS lidar files of 10 .. 10^8 points, wall median of 5 after a warm-up"
  for n in ${SIZES:-10 1000 100000 1000000 3000000 10000000 30000000 100000000 200000000}; do
    f=$work/x$n.las; [[ -f $f ]] || heightgrid synth lidar --points $n -o "$f" -q
    line="$n points:"
    for d in ${DEVICES:-cpu gpu auto}; do
      # shellcheck disable=SC2086
      heightgrid grid "$f" -o "$work/x.tif" --overwrite --res 1 --device $d ${CROSS_ARGS:-} -q 2> /dev/null
      ws=(); for _ in $(seq "${RUNS:-5}"); do
        # shellcheck disable=SC2086
        /usr/bin/time -f %e -o "$work/t" heightgrid grid "$f" -o "$work/x.tif" --overwrite --res 1 --device $d ${CROSS_ARGS:-} -q 2> /dev/null \
          || fail "crossover $n $d"
        ws+=("$(tail -1 "$work/t")"); done
      line+=" $d $(printf '%s\n' "${ws[@]}" | sort -n | sed -n "$(( (${#ws[@]} + 1) / 2 ))p") s;"
    done
    echo "$line"
  done
fi

if [[ $part == laz ]]; then
  # laspy + lazrs make the LAZ inputs; without network they come as wheels (LAZ_WHEELS, see laz_bench.sh).
  wheels=${LAZ_WHEELS:-/tmp/laz_wheels}
  if ! python3 -c 'import laspy, lazrs' 2> /dev/null; then
    python3 -m pip install -q --no-index --find-links "$wheels" --find-links "$wheels/numpy" --target "$work/pydeps" \
      --no-deps laspy lazrs > "$work/pip.log" 2>&1 || { echo "FAIL: laspy/lazrs not installable"; cat "$work/pip.log"; exit 1; }
    export PYTHONPATH=$work/pydeps
  fi
  las=$work/l100000000.las
  [[ -f $las ]] || heightgrid synth lidar --points 100000000 -o "$las" -q
  step "LAZ inputs: one 10^8-point file (LAS 1.4 PDRF 6, lazrs, 50000-point chunks) and 1000 tiles of 64,600 points"
  [[ -f $work/big.laz ]] || /usr/bin/time -f "big.laz made in %e s" python3 scripts/laz_make_big.py "$las" "$work/big.laz" | tail -1
  [[ -d $work/tiles ]] || /usr/bin/time -f "tiles made in %e s" python3 scripts/laz_make_tiles.py "$las" "$work/tiles" --tiles 1000 --points-per-tile 64600
  du -sh "$work/big.laz" "$work/tiles"
  heightgrid limits "$work/big.laz" 2>&1 | sed 's/^heightgrid: info: //' | head -1
  for d in gpu cpu auto; do
    step "grid big.laz --res 1 --device $d"; timed "$d" heightgrid grid "$work/big.laz" -o "$work/z.tif" --overwrite --res 1 --device $d
    step "grid tiles/ --res 1 --device $d"; timed "$d" heightgrid grid "$work/tiles" -o "$work/zt.tif" --overwrite --res 1 --device $d
  done
fi

if [[ $part == huge ]]; then
  las=$work/l1e9.las
  [[ -f $las ]] || { step "synth lidar --points 1e9"; /usr/bin/time -f "%e s" heightgrid synth lidar --points 1000000000 -o "$las" -q; }
  for d in gpu cpu; do
    step "10^9 points from a LAS file ($(du -h "$las" | cut -f1)), --res 1, --device $d (one warm-up, then one timed run)"
    heightgrid grid "$las" --res 1 -o "$work/h.tif" --overwrite --device $d -q 2> /dev/null
    /usr/bin/time -f "wall %e s, peak RSS %M KB" heightgrid grid "$las" --res 1 -o "$work/h.tif" --overwrite --device $d -v 2>&1 \
      | grep -E 'points read|read:|GPU |bottleneck|wall|error' | sed 's/^heightgrid: //' | cut -c1-400
    checked "huge 1e9 $d" "${PIPESTATUS[0]}"
  done
  rm -f "$las"
  step "10^10 streamed synthetic points (lidar, 100 km x 100 km, --res 10: 10^8 cells of ~100 points), --device gpu"
  /usr/bin/time -f "wall %e s, peak RSS %M KB" heightgrid grid --synth lidar --points 10000000000 --synth-extent 0 0 100000 100000 --res 10 \
    -o "$work/h.tif" --overwrite --device gpu -v 2>&1 | grep -E 'points read|read:|GPU |bottleneck|wall|error' | sed 's/^heightgrid: //' | cut -c1-400
  checked "huge 1e10" "${PIPESTATUS[0]}"
fi

if [[ $part == ladder ]]; then
  step "bench-reduce (issue #6)"
  heightgrid bench-reduce --sizes 17..28 --types int32,float,double --ops sum,max --kernels 1-10 \
    --repeat 20 --cpu-repeat 1 --accuracy --accuracy-sizes 10..28 --json "$out/bench_reduce.json" --overwrite \
    > "$out/bench_reduce.txt" 2>&1; checked bench-reduce $?; grep -iE 'verdict|meets|MISSES|WRONG' "$out/bench_reduce.txt" | head -20
fi

if [[ $part == sanitize2 ]]; then
  step "memcheck: hybrid, atomic, ladder"
  timeout 200 compute-sanitizer --error-exitcode 86 --tool memcheck --report-api-errors no kernels_tests \
    --gtest_filter='*hybrid*:*Hybrid*:*atomic*:*Atomic*:*StreamGate*:-*OutOfMemory*' > "$out/memcheck2.log" 2>&1
  checked memcheck2 $?; grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck2.log" | tail -3
  timeout 200 compute-sanitizer --error-exitcode 86 --tool memcheck --report-api-errors no ladder_tests \
    > "$out/memcheck2_ladder.log" 2>&1
  checked memcheck2_ladder $?; grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck2_ladder.log" | tail -3
  step "racecheck: hybrid, ladder kernels 5-7"
  timeout 300 compute-sanitizer --error-exitcode 86 --tool racecheck --report-api-errors no kernels_tests \
    --gtest_filter='*Hybrid*:AllModes/ReduceMode.*/hybrid' > "$out/racecheck2.log" 2>&1
  checked racecheck2 $?; grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$out/racecheck2.log" | tail -3
  timeout 300 compute-sanitizer --error-exitcode 86 --tool racecheck --report-api-errors no ladder_tests \
    --gtest_filter='*Ladder.Matches*/k5_*:*Ladder.Matches*/k6_*:*Ladder.Matches*/k7_*' > "$out/racecheck2_ladder.log" 2>&1
  checked racecheck2_ladder $?; grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$out/racecheck2_ladder.log" | tail -3
fi

if [[ $part == sweep ]]; then
  step "hybrid threshold sweep, 10^8"
  hybrid_sweep --points 1e8 ${SWEEP_ARGS:-} > "$out/sweep_1e8.md" 2>&1; checked hybrid_sweep $?; tail -30 "$out/sweep_1e8.md"
fi

if [[ $part == compare8 ]]; then
  for k in uniform lidar skewed clustered; do
    step "compare --synth $k --points 1e8"
    heightgrid compare --synth $k --points 100000000 --res 1 --repeat 10 --json "$out/cmp_${k}_1e8.json" --overwrite \
      > "$out/cmp_${k}_1e8.txt" 2>&1; checked "compare $k 1e8" $?; grep -E "$mode_rows|identical|DIFFER" "$out/cmp_${k}_1e8.txt"
  done
fi

if [[ $part == sums ]]; then
  : > "$out/cmp_sums_1e8.txt"
  for k in uniform lidar skewed clustered; do
    step "compare --synth $k --points 1e8 --metrics range,mean,stddev"
    echo "=== $k" >> "$out/cmp_sums_1e8.txt"
    heightgrid compare --synth $k --points 100000000 --res 1 --repeat 10 --metrics range,mean,stddev \
      --modes thread,warp,hybrid >> "$out/cmp_sums_1e8.txt" 2>&1; checked "compare sums $k" $?
  done
  grep -E '^===|^(thread|warp|hybrid) |identical|DIFFER' "$out/cmp_sums_1e8.txt"
fi

if [[ $part == compare9 ]]; then
  for k in ${KINDS:-uniform lidar}; do
    step "compare --synth $k --points 1e9"
    heightgrid compare --synth $k --points 1000000000 --res 1 --repeat 5 ${MODES:+--modes "$MODES"} --json "$out/cmp_${k}_1e9.json" --overwrite \
      > "$out/cmp_${k}_1e9.txt" 2>&1; checked "compare $k 1e9" $?; grep -E "$mode_rows|identical|DIFFER" "$out/cmp_${k}_1e9.txt"
  done
fi

if [[ $part == torch ]]; then
  step "PyTorch scatter_reduce vs heightgrid's device pipeline, 10^8 points, ~10 per cell (issue #7)"
  python3 scripts/torch_scatter_baseline.py --points 1e8 --side 3162 --repeat 10 --modes hybrid,thread,warp,atomic \
    --workdir "$work" > "$out/torch_1e8.txt" 2>&1; checked torch $?; cat "$out/torch_1e8.txt" | tail -40
fi

if [[ $part == pipeline ]]; then
  for k in uniform lidar skewed clustered; do
    step "device pipeline (cell ids + CSR + reduce), --synth $k --points 1e8 --mode auto --repeat 10"
    heightgrid grid --synth $k --points 100000000 --res 1 -o "$work/p.tif" --overwrite --device gpu \
      --metrics range --repeat 10 -v --co COMPRESS=NONE 2>&1 | grep -E 'GPU \(|reduce moved|auto|picked|points read|error'
    checked "pipeline $k" "${PIPESTATUS[0]}"
  done
fi

if [[ $part == real ]]; then
  # Every uncompressed real LAS file, as docs/benchmarks.md's real-file table.
  tag=${TAG:-all}; : > "$out/cmp_real_${tag}.txt"
  while IFS= read -r f; do
    rel=${f#"$HEIGHTGRID_REAL_DATA_DIR"/}
    echo "=== heightgrid compare $rel --res 1 --repeat ${REPEAT:-20}" >> "$out/cmp_real_${tag}.txt"
    heightgrid compare "$f" --res 1 --repeat "${REPEAT:-20}" ${MODES:+--modes "$MODES"} ${COMPARE_ARGS:-} >> "$out/cmp_real_${tag}.txt" 2>&1 \
      || { echo "rc=$? for $rel" >> "$out/cmp_real_${tag}.txt"; fail "compare $rel"; }
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
      > "$out/ncu_$k.txt" 2>&1; checked "ncu $k" $?
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
    > "$out/ncu_source_$k.csv" 2>&1; checked "ncu source $k" $?; wc -l "$out/ncu_source_$k.csv"
  timeout 200 ncu --clock-control none -k "regex:${KERNEL:-reduce_balanced_tile}" --launch-count 1 \
    --section SourceCounters --section InstructionStats --section WarpStateStats \
    heightgrid compare --synth "$k" --points "${POINTS:-100000000}" --res 1 --repeat 1 --modes ${MODES:-hybrid} \
    > "$out/ncu_details_$k.txt" 2>&1; checked "ncu details $k" $?
fi

if [[ $part == gpus ]]; then
  # --gpus scaling (issue #20): tiled jobs with --gpus 1, 2, ... every GPU of the host; wall, RSS, the
  # per-worker busy shares (the summary line) and byte-identical tiles across GPU counts.
  ngpu=$(nvidia-smi -L | wc -l)
  step "devices"; nvidia-smi -L; nproc
  counts=$(seq 1 "$ngpu")
  tiled() {  # tiled LABEL DIR ARGS...: one run, wall + RSS + the summary line
    local label=$1 dir=$2; shift 2
    rm -rf "$dir"
    /usr/bin/time -f "%e %M" -o "$work/time" heightgrid grid "$@" -o "$dir" > "$work/v.log" 2>&1 || { fail "$label"; tail -3 "$work/v.log"; return; }
    read -r w m < "$work/time"
    echo "$label: wall $w s, peak RSS $((m / 1024)) MiB"
    grep -E 'tiles of' "$work/v.log" | sed 's/^heightgrid: info: //' | cut -c1-600
  }
  same_tiles() {  # same_tiles DIR_A DIR_B: every tile byte-identical (tiles are named after their directory)
    local a=$1 b=$2 n=0 bad=0 pa pb
    pa=$(basename "$a"); pb=$(basename "$b")
    for f in "$a/${pa}"_*.tif; do n=$((n + 1)); cmp -s "$f" "$b/${pb}_${f#"$a/${pa}"_}" || bad=$((bad + 1)); done
    [[ $(ls "$a"/*.tif | wc -l) == $(ls "$b"/*.tif | wc -l) ]] || bad=$((bad + 1))
    echo "tiles $a vs $b: $n tiles, $bad differ"; (( bad == 0 )) || fail "tiles differ: $a $b"
  }
  for n in ${SYNTH_POINTS:-1000000000 10000000000}; do
    step "streamed synthetic uniform, $n points, 100 km x 100 km at 10 m, tiles of 2500 x 2500 cells"
    for g in $counts; do
      tiled "synth $n --gpus $g" "$work/s_$g" --synth uniform --points "$n" --synth-extent 0 0 100000 100000 --res 10 \
        --tile-size 2500 --metrics range,count --gpus "$g" -v
    done
  done
  # Byte comparisons with NUM_THREADS=1: GDAL's compression threads may store a tile's blocks in
  # another order from run to run (same cells, other bytes).
  step "tiles byte-identical across GPU counts (synthetic 10^9, --co NUM_THREADS=1)"
  for g in $counts; do
    tiled "synth 1e9 equal --gpus $g" "$work/se_$g" --synth uniform --points 1000000000 --synth-extent 0 0 100000 100000 \
      --res 10 --tile-size 2500 --metrics range,min,max,count --gpus "$g" --co NUM_THREADS=1
  done
  for g in $counts; do (( g > 1 )) && same_tiles "$work/se_1" "$work/se_$g"; done
  cat_dir=$work/catalogue
  if [[ ! -d $cat_dir ]]; then
    step "catalogue: 8 x 8 LAS tiles of 1250 m (lidar, 10 points/m2, 1.5625e7 points each: 10^9 points)"
    mkdir -p "$cat_dir"
    t0=$(date +%s)
    for i in $(seq 0 7); do
      for j in $(seq 0 7); do
        heightgrid synth lidar --points 15625000 --threads 4 --seed $((i * 8 + j + 1)) --a_srs EPSG:32633 -q \
          --extent $((i * 1250)) $((j * 1250)) $((i * 1250 + 1250)) $((j * 1250 + 1250)) -o "$cat_dir/t_${i}_$j.las" &
      done
      wait
    done
    echo "made in $(( $(date +%s) - t0 )) s: $(du -sh "$cat_dir" | cut -f1)"
  fi
  step "catalogue 10^9 points, --res 1, tiles of 2500 x 2500 cells (16 tiles, 4 files each): warm-up, then 2 runs each"
  heightgrid grid "$cat_dir" -o "$work/c_warm" --res 1 --tile-size 2500 --gpus 1 -q > /dev/null 2>&1; rm -rf "$work/c_warm"
  for g in $counts; do
    for k in 1 2; do tiled "catalogue --gpus $g (run $k)" "$work/c_$g" "$cat_dir" --res 1 --tile-size 2500 --gpus "$g" -v; done
  done
  tiled "catalogue --device cpu" "$work/c_cpu" "$cat_dir" --res 1 --tile-size 2500 --device cpu -v
  step "catalogue tiles byte-identical across GPU counts and the CPU (--co NUM_THREADS=1)"
  for g in $counts cpu; do
    dev="--gpus $g"; [[ $g == cpu ]] && dev="--device cpu"
    tiled "catalogue equal $dev" "$work/ce_$g" "$cat_dir" --res 1 --tile-size 2500 --metrics range,min,max,count $dev --co NUM_THREADS=1
  done
  for g in $counts cpu; do [[ $g != 1 ]] && same_tiles "$work/ce_1" "$work/ce_$g"; done
  heightgrid limits "$cat_dir/t_0_0.las" 2>&1 | sed 's/^heightgrid: info: //' | head -4
fi

# mpi_series PREFIX ARGS...: the tiled grid job ARGS as a plain run, then under MPI_RANKS ranks
# (every rank grids), each into $work/PREFIX_N with its wall, RSS and -v stages; then every run's
# tiles against the plain run's, byte for byte.
mpi_series() {
  local prefix=$1 n w m rc bad; shift
  command -v mpirun > /dev/null || { fail "mpirun not found"; return; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for n in ${MPI_RANKS:-1 2 4 8 16}; do
    local dir=$work/${prefix}_$n launcher=()
    rm -rf "$dir"
    (( n > 1 )) && launcher=(mpirun -n "$n" --oversubscribe --bind-to none)
    /usr/bin/time -f "%e %M" -o "$work/time" "${launcher[@]}" heightgrid grid "$@" -o "$dir" -v > "$dir.log" 2>&1
    rc=$?; (( rc == 0 )) || { fail "$prefix: $n ranks exited $rc"; tail -5 "$dir.log"; }
    read -r w m < "$work/time"
    echo "ranks $n: wall $w s, peak RSS $((m / 1024)) MiB"
    grep -E 'tiles of' "$dir.log" | sed 's/^heightgrid: info: //; s/; rank/\n  rank/g' | grep -E "rank (0|1) |tiles of|total" | cut -c1-200
    grep -E 'stages' "$dir.log" | sed 's/^heightgrid: debug: //'
  done
  local plain=$work/${prefix}_1 p=${prefix}_1
  for n in ${MPI_RANKS:-1 2 4 8 16}; do
    (( n == 1 )) && continue
    bad=0; for f in "$plain/${p}"_*.tif; do cmp -s "$f" "$work/${prefix}_$n/${prefix}_${n}_${f#"$plain/${p}_"}" || bad=$((bad + 1)); done
    echo "ranks $n vs plain: $(ls "$plain/${p}"_*.tif | wc -l) tiles, $bad differ"; (( bad == 0 )) || fail "$prefix: $n ranks' tiles differ"
  done
}

if [[ $part == mpi ]]; then
  # MPI scaling of a tiled job with the CPU backend, and a catalogue of >= 1000 tiles against one
  # run (issue #19): 32 x 32 = 1024 LAS files of MPI_FILE_POINTS points on 250 x 250 m, gridded as
  # 1024 tiles of 250 x 250 cells; a plain run, then MPI_RANKS ranks (every rank grids, rank 0 too),
  # one thread each. The machine's own ceiling in the same run: 16 plain single-threaded processes
  # at once, each over a sixteenth of the files, against one of them alone.
  per_file=${MPI_FILE_POINTS:-366000}
  cat_dir=$work/mpicat_$per_file
  step "catalogue: 1024 files of $per_file points"; nproc
  if [[ ! -d $cat_dir ]]; then
    mkdir -p "$cat_dir"
    for i in $(seq 0 31); do
      for j in $(seq 0 31); do
        heightgrid synth lidar --points "$per_file" --threads 1 --seed $((i * 32 + j + 1)) --a_srs EPSG:32633 -q \
          --extent $((i * 250)) $((j * 250)) $((i * 250 + 250)) $((j * 250 + 250)) -o "$cat_dir/t_${i}_$j.las" &
        (( (j + 1) % 16 == 0 )) && wait
      done
    done
    wait
  fi
  heightgrid info "$cat_dir" --headers-only 2>&1 | head -6
  cat "$cat_dir"/*.las > /dev/null  # in the page cache
  mpi_series m "$cat_dir" --res 1 --tile-size 250 --device cpu --threads 1 ${MPI_ARGS:-}
  step "the 1024 tiles' mosaic against one raster of the whole grid (every cell, bit for bit)"
  /usr/bin/time -f "%e %M" -o "$work/time" heightgrid grid "$cat_dir" --res 1 --device cpu --co NUM_THREADS=1 ${MPI_ARGS:-} -o "$work/single.tif" -q --overwrite
  echo "single raster: wall $(cut -d' ' -f1 "$work/time") s"
  raster_equal "$work/single.tif" "$work/m_1/m_1.vrt" || fail "mosaic differs from the single run"
  step "the machine's ceiling: 16 plain single-threaded runs at once (a sixteenth of the files each) vs one alone"
  group() {  # group G DIR: the files of rows 2G and 2G+1, gridded alone
    heightgrid grid "$cat_dir/t_$(( 2 * $1 ))_"*.las "$cat_dir/t_$(( 2 * $1 + 1 ))_"*.las --res 1 --tile-size 250 \
      --device cpu --threads 1 ${MPI_ARGS:-} -o "$2" -q --overwrite
  }
  for k in 1 2; do
    s0=$(date +%s.%N); group 0 "$work/g_alone"; s1=$(date +%s.%N)
    echo "one sixteenth alone: $(awk "BEGIN{print $s1 - $s0}") s"
  done
  s0=$(date +%s.%N)
  for g in $(seq 0 15); do group "$g" "$work/g_$g" & done
  wait
  s1=$(date +%s.%N)
  echo "sixteen sixteenths at once: $(awk "BEGIN{print $s1 - $s0}") s"
fi

if [[ $part == mpi_synth ]]; then
  # MPI scaling of a long tiled job (issue #19): SYNTH_POINTS (10^9) streamed synthetic lidar points
  # over 8000 x 8000 m at 1 m, 1024 tiles of 250 x 250 cells, each tile generating its own share;
  # a plain run, then MPI_RANKS ranks, one thread each; tiles byte-identical to the plain run's.
  mpi_series s --synth lidar --points "${SYNTH_POINTS:-1000000000}" --synth-extent 0 0 8000 8000 --res 1 \
    --tile-size 250 --device cpu --threads 1 ${MPI_ARGS:-}
fi

if [[ $part == percentiles ]]; then
  # Percentiles: GPU vs CPU byte for byte on the real files and synthetic kinds; the device pipeline
  # (compare: cell ids + CSR + the two sorts); end to end against the range-only run (POINTS LAS).
  m=p5,median,p95,p2.5,prange,count
  step "percentile bands, --device gpu vs cpu, byte for byte"
  bad=0; n=0
  while IFS= read -r -d '' f; do
    n=$((n + 1))
    heightgrid grid "$f" -o "$work/pg.tif" --overwrite --res 5 --metrics $m --device gpu -q 2> "$work/pg.err" || { fail "pct gpu $f"; tail -2 "$work/pg.err"; continue; }
    heightgrid grid "$f" -o "$work/pc.tif" --overwrite --res 5 --metrics $m --device cpu -q 2> /dev/null || { fail "pct cpu $f"; continue; }
    cmp -s "$work/pg.tif" "$work/pc.tif" || { bad=$((bad + 1)); echo "differs: $f"; }
  done < <(find "$extra/real" \( -iname '*.las' -o -iname '*.laz' \) -print0)
  for kind in uniform lidar clustered skewed; do
    n=$((n + 1))
    heightgrid grid --synth $kind --points 3000000 -o "$work/sg.tif" --overwrite --res 1 --metrics $m --device gpu -q || fail "pct synth $kind gpu"
    heightgrid grid --synth $kind --points 3000000 -o "$work/sc.tif" --overwrite --res 1 --metrics $m --device cpu -q || fail "pct synth $kind cpu"
    cmp -s "$work/sg.tif" "$work/sc.tif" || { bad=$((bad + 1)); echo "differs: synth $kind"; }
  done
  echo "$n inputs, $bad differ"; (( bad == 0 )) || fail "percentile bands differ between GPU and CPU"
  pts=${POINTS:-100000000}
  step "device pipeline: compare --synth lidar --points $pts --metrics p5,median,p95,prange"
  heightgrid compare --synth lidar --points "$pts" --res 1 --metrics p5,median,p95,prange --repeat 5 2>&1 | grep -E 'phases|^sort|^cpu|identical|differ|mode ' || fail "compare percentiles"
  las=$work/l$pts.las
  [[ -f $las ]] || { step "synth lidar --points $pts"; heightgrid synth lidar --points "$pts" -o "$las" -q; }
  for metrics in range p5,median,p95,prange; do
    step "grid $(basename "$las") --res 1 --device gpu --metrics $metrics"
    timed "gpu $metrics" heightgrid grid "$las" -o "$work/o.tif" --overwrite --res 1 --device gpu --metrics $metrics
  done
  step "grid $(basename "$las") --res 1 --device cpu --metrics p5,median,p95,prange"
  timed "cpu percentiles" heightgrid grid "$las" -o "$work/o.tif" --overwrite --res 1 --device cpu --metrics p5,median,p95,prange
  for small in 1000000 10000000 30000000; do
    f=$work/x$small.las; [[ -f $f ]] || heightgrid synth lidar --points $small -o "$f" -q
    for d in cpu gpu; do
      timed "$small points, percentiles, $d" heightgrid grid "$f" -o "$work/o.tif" --overwrite --res 1 --device $d --metrics p5,median,p95,prange
    done
  done
fi

if (( ${#failures[@]} > 0 )); then
  echo; echo "=== ${#failures[@]} GPU check(s) FAILED:"; printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo; echo "=== every GPU check passed"
