#!/usr/bin/env bash
# Builds the fuzzers (libFuzzer, ASan, UBSan; a clang CPU tree of the whole project) in BUILD_DIR
# and runs each for SECONDS, FUZZ_JOBS (default 2) at a time:
#   las_file_fuzz, laz_file_fuzz  whole LAS / LAZ files through open_las_parts and open_las_source
#   xyz_fuzz                      XYZ/CSV text through open_text_source
#   options_fuzz                  command lines through the app's parser and its pre-work checks
#   las_header_fuzz               the LAS header/VLR/EVLR parser alone
#   laz_chunk_fuzz                the LAZ chunk decoders alone
# Seeds: the committed corpus (tests/fuzz/corpus/<target>), files written by our LAS writer, and
# the small real LAS/LAZ files of ../shared/data/real (HEIGHTGRID_REAL_DATA_DIR) when present.
# Exits non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory) and
# names the input that caused it.
#
#   tests/fuzz/run_fuzz.sh build-asan 60           # every target, 60 s each
#   FUZZ_TARGETS="xyz_fuzz" tests/fuzz/run_fuzz.sh build-asan 3600
#
# BUILD_DIR/fuzz/<target>/corpus keeps what a fuzzer learned between runs (cache it in CI);
# BUILD_DIR/fuzz/<target>/artifacts receives the input of a finding. A fixed finding's input goes
# into tests/fuzz/regressions/<target>/, which CTest replays in every build.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS_PER_TARGET" >&2
  exit 2
fi
build_dir=$1
seconds=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
targets=(${FUZZ_TARGETS:-las_file_fuzz laz_file_fuzz xyz_fuzz options_fuzz las_header_fuzz laz_chunk_fuzz})
jobs=${FUZZ_JOBS:-2}

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cxx=${CXX_FUZZ:-}
  if [[ -z $cxx ]]; then
    for candidate in clang++ clang++-14; do
      if command -v "$candidate" > /dev/null; then cxx=$candidate; break; fi
    done
  fi
  if [[ -z $cxx ]]; then
    echo "run_fuzz.sh: no clang++ found (set CXX_FUZZ)" >&2
    exit 2
  fi
  cmake -S "$root" -B "$build_dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHEIGHTGRID_CUDA=OFF -DHEIGHTGRID_SANITIZE=address,undefined -DHEIGHTGRID_FUZZ=ON > /dev/null
fi
cmake --build "$build_dir" -j "${FUZZ_BUILD_JOBS:-2}" --target "${targets[@]}" las_fuzz_seed_writer laz_fuzz_seeds
bin=$build_dir/tests/fuzz
work=$build_dir/fuzz
mkdir -p "$work"

# Generated seeds: every version/format the writer supports, with and without CRS records,
# extra bytes, EVLRs (for las_header_fuzz), and the chunks of the LAZ files (laz_chunk_fuzz).
seeds=$work/seeds
rm -rf "$seeds"
mkdir -p "$seeds/writer" "$seeds/real" "$seeds/laz_chunks"
for spec in "0 2" "1 2" "3 2" "0 4" "1 4" "3 4" "6 4"; do
  read -r format minor <<< "$spec"
  "$bin/las_fuzz_seed_writer" write "$seeds/writer/w_${format}_${minor}.las" 5 "$format" "$minor"
  "$bin/las_fuzz_seed_writer" write "$seeds/writer/w_${format}_${minor}_crs.las" 3 "$format" "$minor" --crs EPSG:32615 --extra-bytes 3
  if [[ $minor == 4 ]]; then
    "$bin/las_fuzz_seed_writer" write "$seeds/writer/w_${format}_${minor}_evlr.las" 2 "$format" "$minor" --crs EPSG:4326 --evlr
  fi
done
laz_files=()
for f in "$here"/corpus/laz_file_fuzz/*.laz; do
  case $f in *_truncated_* | *_count_lie.laz | *_zero_scale.laz | *_chunk_table_garbage.laz) ;; *) laz_files+=("$f") ;; esac
done
real_dir=${HEIGHTGRID_REAL_DATA_DIR:-$root/../shared/data/real}
if [[ -d $real_dir ]]; then
  while IFS= read -r -d '' f; do
    rel=${f#"$real_dir"/}
    cp "$f" "$seeds/real/${rel//\//_}"
  done < <(find "$real_dir" -type f \( -name '*.las' -o -name '*.laz' \) -size -128k -print0)
  while IFS= read -r -d '' f; do laz_files+=("$f"); done < <(find "$real_dir" -type f -name '*.laz' -print0 | sort -z)
fi
"$bin/laz_fuzz_seeds" "$seeds/laz_chunks" "${laz_files[@]}" > /dev/null ||
  echo "run_fuzz.sh: some LAZ chunk seeds could not be cut (see above)"

# What each target starts from, how long an input may be, and its dictionary. The real files seed
# the parsers that do not run on whole files only: what las_file_fuzz and laz_file_fuzz learn may
# be merged into the committed corpus (fuzzer -merge=1 tests/fuzz/corpus/T BUILD_DIR/fuzz/T/corpus),
# which holds no part of those files.
declare -A seed_dirs max_len dict
seed_dirs=([las_file_fuzz]="$here/corpus/las_file_fuzz $seeds/writer"
           [laz_file_fuzz]="$here/corpus/laz_file_fuzz"
           [xyz_fuzz]="$here/corpus/xyz_fuzz"
           [options_fuzz]="$here/corpus/options_fuzz"
           [las_header_fuzz]="$seeds/writer $seeds/real $here/corpus/las_file_fuzz $here/corpus/laz_file_fuzz"
           [laz_chunk_fuzz]="$seeds/laz_chunks")
# Whole files stay small (a few KB hold several parts and chunks); a layered chunk of a real file
# is ~200 KB.
max_len=([las_file_fuzz]=16384 [laz_file_fuzz]=16384 [xyz_fuzz]=4096 [options_fuzz]=1024
         [las_header_fuzz]=131072 [laz_chunk_fuzz]=262144)
dict=([las_file_fuzz]=las.dict [laz_file_fuzz]=las.dict [xyz_fuzz]=xyz.dict [options_fuzz]=options.dict
      [las_header_fuzz]=las.dict [laz_chunk_fuzz]=)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# GDAL (the CRS of a LAS file is read through it) would print a warning per odd input.
export CPL_LOG=${CPL_LOG:-/dev/null}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan_suppressions.txt}

fuzz_one() {
  local target=$1 dir=$work/$1
  rm -rf "$dir/artifacts"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  local args=(-max_total_time="$seconds" -max_len="${max_len[$target]}" -timeout=10 -rss_limit_mb=2048
              -print_final_stats=1 -artifact_prefix="$dir/artifacts/")
  if [[ -n ${dict[$target]} ]]; then args+=(-dict="$here/${dict[$target]}"); fi
  # shellcheck disable=SC2086 # seed_dirs holds several directories
  "$bin/$target" "${args[@]}" "$dir/corpus" ${seed_dirs[$target]} > "$dir/log" 2>&1
}

report() {
  local target=$1 status=$2 dir=$work/$1
  if [[ $status -eq 0 && -z $(ls -A "$dir/artifacts") ]]; then
    echo "run_fuzz.sh: $target ran ${seconds}s without findings ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log" | grep -o '[0-9]*$') inputs)"
    return 0
  fi
  tail -n 60 "$dir/log" >&2
  echo "run_fuzz.sh: $target found a problem (exit $status); the input:" >&2
  ls -d "$dir"/artifacts/* >&2 || true
  echo "run_fuzz.sh: replay it with $bin/$target INPUT (or ${target}_replay INPUT in any build);" \
    "once fixed, add it to tests/fuzz/regressions/$target/" >&2
  return 1
}

failed=0
declare -A pids
for target in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  fuzz_one "$target" &
  pids[$target]=$!
done
for target in "${targets[@]}"; do
  status=0
  wait "${pids[$target]}" || status=$?
  report "$target" "$status" || failed=1
done
exit $failed
