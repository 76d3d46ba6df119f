#!/usr/bin/env bash
# Builds the fuzzers with clang (libFuzzer, ASan, UBSan) in BUILD_DIR and runs them for SECONDS
# in total: a third for las_header_fuzz (seeded with files written by our LAS writer and the
# small real LAS/LAZ files of ../shared/data/real, HEIGHTGRID_REAL_DATA_DIR, when present), the
# rest for laz_chunk_fuzz (seeded with the chunks and chunk tables of the real LAZ files).
# Exits non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory).
#
#   tests/fuzz/run_fuzz.sh build-fuzz 90
#
# BUILD_DIR/corpus and BUILD_DIR/corpus_laz keep what the fuzzers learned between runs (cache
# them in CI); BUILD_DIR/artifacts and BUILD_DIR/artifacts_laz receive the input of any finding.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$1
seconds=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

cxx=${CXX_FUZZ:-}
if [[ -z $cxx ]]; then
  for candidate in clang++-14 clang++; do
    if command -v "$candidate" > /dev/null; then cxx=$candidate; break; fi
  done
fi
if [[ -z $cxx ]]; then
  echo "run_fuzz.sh: no clang++ found (set CXX_FUZZ)" >&2
  exit 2
fi

cmake -S "$here" -B "$build_dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build_dir" -j "${FUZZ_BUILD_JOBS:-2}"

seeds="$build_dir/seeds"
corpus="$build_dir/corpus"
artifacts="$build_dir/artifacts"
laz_seeds="$build_dir/seeds_laz"
laz_corpus="$build_dir/corpus_laz"
laz_artifacts="$build_dir/artifacts_laz"
rm -rf "$seeds" "$artifacts" "$laz_seeds" "$laz_artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts" "$laz_seeds" "$laz_corpus" "$laz_artifacts"
header_seconds=$(( seconds / 3 > 0 ? seconds / 3 : 1 ))
laz_seconds=$(( seconds - header_seconds > 0 ? seconds - header_seconds : 1 ))

# Every version/format the writer supports, with and without CRS records, extra bytes, EVLRs.
writer="$build_dir/las_fuzz_seed_writer"
for spec in "0 2" "1 2" "3 2" "0 4" "1 4" "3 4" "6 4"; do
  read -r format minor <<< "$spec"
  "$writer" write "$seeds/w_${format}_${minor}.las" 5 "$format" "$minor"
  "$writer" write "$seeds/w_${format}_${minor}_crs.las" 3 "$format" "$minor" --crs EPSG:32615 --extra-bytes 3
  if [[ $minor == 4 ]]; then
    "$writer" write "$seeds/w_${format}_${minor}_evlr.las" 2 "$format" "$minor" --crs EPSG:4326 --evlr
  fi
done

real_dir=${HEIGHTGRID_REAL_DATA_DIR:-$root/../shared/data/real}
if [[ -d $real_dir ]]; then
  while IFS= read -r -d '' f; do
    rel=${f#"$real_dir"/}
    cp "$f" "$seeds/real_${rel//\//_}"
  done < <(find "$real_dir" -type f \( -name '*.las' -o -name '*.laz' \) -size -128k -print0)
  laz_files=()
  while IFS= read -r -d '' f; do laz_files+=("$f"); done < <(find "$real_dir" -type f -name '*.laz' -print0 | sort -z)
  if [[ ${#laz_files[@]} -gt 0 ]]; then
    "$build_dir/laz_fuzz_seeds" "$laz_seeds" "${laz_files[@]}" ||
      echo "run_fuzz.sh: some LAZ seeds could not be cut (see above)"
  fi
else
  echo "run_fuzz.sh: $real_dir not present; seeding with writer output only"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
"$build_dir/las_header_fuzz" \
  -max_total_time="$header_seconds" -max_len=131072 -timeout=10 -rss_limit_mb=2048 \
  -dict="$here/las.dict" -print_final_stats=1 -artifact_prefix="$artifacts/" \
  "$corpus" "$seeds" || status=$?

if [[ $status -ne 0 ]] || [[ -n $(ls -A "$artifacts") ]]; then
  echo "run_fuzz.sh: las_header_fuzz found a problem (exit $status); inputs in $artifacts" >&2
  exit $(( status != 0 ? status : 1 ))
fi
echo "run_fuzz.sh: las_header_fuzz ran ${header_seconds}s without findings"

# A layered chunk is decoded whole, so the largest seeds (a real chunk) are ~200 KB.
"$build_dir/laz_chunk_fuzz" \
  -max_total_time="$laz_seconds" -max_len=262144 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$laz_artifacts/" \
  "$laz_corpus" "$laz_seeds" || status=$?

if [[ $status -ne 0 ]] || [[ -n $(ls -A "$laz_artifacts") ]]; then
  echo "run_fuzz.sh: laz_chunk_fuzz found a problem (exit $status); inputs in $laz_artifacts" >&2
  exit $(( status != 0 ? status : 1 ))
fi
echo "run_fuzz.sh: laz_chunk_fuzz ran ${laz_seconds}s without findings"
