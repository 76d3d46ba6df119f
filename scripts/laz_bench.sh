#!/usr/bin/env bash
# LAZ decoding speed: heightgrid's native decoder against laspy + lazrs on the same big files.
#
#   scripts/laz_bench.sh BUILD_DIR WORK_DIR "1 2 4 8 16" [REPEAT] [POINTS]
#
# BUILD_DIR holds `heightgrid` and `bench/las_read_bench` (a Release build). WORK_DIR gets
# (once; reused when present) one POINTS-point cloud (default 10^8) from `heightgrid synth lidar`
# as two LAZ files made by scripts/laz_make_big.py (lazrs, 50000-point chunks): LAS 1.4 PDRF 6
# (layered chunks, items v3) and LAS 1.2 PDRF 1 (pointwise chunks, items v2); the uncompressed
# LAS file is deleted afterwards unless KEEP_LAS=1. Then, for each file and thread count T:
#   las_read_bench read FILE --threads T --repeat REPEAT   (heightgrid, all of a point's fields
#                                                           that the gridder uses)
#   laz_bench.py FILE --backend lazrs                      (once, T = 1)
#   laz_bench.py FILE --backend lazrs-parallel --threads T (T > 1)
# and for the PDRF 6 file lazrs also with --fields heightgrid (the same layers heightgrid decodes).
# Medians of REPEAT (default 3) passes after a warm-up; a summary table goes to stdout and to
# WORK_DIR/laz_bench_results.tsv, the full logs to WORK_DIR/logs/.
#
# Python: uses laspy + lazrs when importable; otherwise installs them without network from the
# wheels in LAZ_WHEELS (default /tmp/laz_wheels; numpy from LAZ_WHEELS/numpy if missing too)
# into WORK_DIR/pydeps and puts that on PYTHONPATH. Make the wheels on a machine with network:
#   pip download --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
#     --no-deps -d /tmp/laz_wheels lazrs==0.8.2 laspy==2.7.0
set -euo pipefail

if [[ $# -lt 3 ]]; then
  echo "usage: $0 BUILD_DIR WORK_DIR \"THREADS...\" [REPEAT] [POINTS]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
work=$2
threads_list=$3
repeat=${4:-3}
points=${5:-100000000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
mkdir -p "$work/logs"
work=$(cd "$work" && pwd)

heightgrid="$build_dir/app/heightgrid"
[[ -x $heightgrid ]] || heightgrid="$build_dir/heightgrid"
bench="$build_dir/bench/las_read_bench"
for tool in "$heightgrid" "$bench"; do
  if [[ ! -x $tool ]]; then
    echo "laz_bench.sh: $tool not found (cmake --build $build_dir --target heightgrid las_read_bench)" >&2
    exit 2
  fi
done

# ---- Python dependencies, offline ----
if ! "$python" -c 'import laspy, lazrs' 2> /dev/null; then
  wheels=${LAZ_WHEELS:-/tmp/laz_wheels}
  deps="$work/pydeps"
  echo "laz_bench.sh: installing laspy + lazrs from $wheels into $deps"
  packages=(laspy lazrs)
  "$python" -c 'import numpy' 2> /dev/null || packages+=(numpy)
  if "$python" -m pip --version > /dev/null 2>&1; then
    "$python" -m pip install --no-index --find-links "$wheels" --find-links "$wheels/numpy" \
      --target "$deps" --no-deps --upgrade "${packages[@]}" > "$work/logs/pip.log" 2>&1 ||
      { cat "$work/logs/pip.log" >&2; exit 2; }
  else
    # No pip: a wheel is a zip archive; unpack the one built for this interpreter.
    "$python" - "$deps" "$wheels" "${packages[@]}" << 'PY'
import glob, sys, zipfile
deps, wheels, packages = sys.argv[1], sys.argv[2], sys.argv[3:]
tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
for package in packages:
    found = [w for w in glob.glob(f"{wheels}/**/{package}-*.whl", recursive=True)
             if "-py3-none-any" in w or f"-{tag}-" in w]
    if not found:
        sys.exit(f"laz_bench.sh: no {package} wheel for {tag} in {wheels}")
    zipfile.ZipFile(sorted(found)[-1]).extractall(deps)
PY
  fi
  export PYTHONPATH="$deps${PYTHONPATH:+:$PYTHONPATH}"
  "$python" -c 'import laspy, lazrs' || exit 2
fi
echo "python: $("$python" --version 2>&1), laspy $("$python" -c 'import laspy; print(laspy.__version__)'), lazrs $("$python" -c 'from importlib.metadata import version; print(version("lazrs"))')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the files ----
# One cloud in two layouts: `synth lidar` writes LAS 1.4 PDRF 6; laz_make_big.py compresses it
# as is (layered chunks) and converted to LAS 1.2 PDRF 1 (pointwise chunks).
pdrf6="$work/pdrf6_${points}.laz"
pdrf1="$work/pdrf1_${points}.laz"
if [[ ! -s $pdrf6 || ! -s $pdrf1 ]]; then
  las="$work/pdrf6_${points}.las"
  if [[ ! -s $las ]]; then
    echo "laz_bench.sh: writing $las ($points points)"
    "$heightgrid" synth lidar --points "$points" --las-version 1.4 -o "$las" --overwrite
  fi
  [[ -s $pdrf6 ]] || "$python" "$here/laz_make_big.py" "$las" "$pdrf6"
  [[ -s $pdrf1 ]] || "$python" "$here/laz_make_big.py" "$las" "$pdrf1" --point-format 1
  if [[ ${KEEP_LAS:-0} != 1 ]]; then rm -f "$las"; fi
fi

# ---- the runs ----
results="$work/laz_bench_results.tsv"
printf 'file\tdecoder\tfields\tthreads\tpoints\tmedian_s\tpoints_per_s\n' > "$results"
field() { sed -n "s/.*[ ]$1=\\([^ ]*\\).*/\\1/p" <<< "$2" | tail -1; }
record() {  # FILE DECODER FIELDS THREADS RESULT_LINE
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$1")" "$2" "$3" "$4" "$(field points "$5")" \
    "$(field median_s "$5")" "$(field points_per_s "$5")" >> "$results"
}
run_logged() {  # LOG COMMAND...: the command's "result:" line
  local log=$1
  shift
  echo "+ $*" >> "$log"
  "$@" >> "$log" 2>&1 || { echo "laz_bench.sh: failed: $* (see $log)" >&2; exit 1; }
  grep '^result:' "$log" | tail -1
}

for name in "pdrf1_${points}" "pdrf6_${points}"; do
  laz="$work/$name.laz"
  log="$work/logs/$name.log"
  : > "$log"
  echo "== $laz ($(du -h "$laz" | cut -f1))"
  for t in $threads_list; do
    line=$(run_logged "$log" "$bench" read "$laz" --threads "$t" --repeat "$repeat")
    record "$laz" heightgrid heightgrid "$t" "$line"
    echo "heightgrid  threads=$t: $(field points_per_s "$line") points/s"
  done
  fields_list="all"
  [[ $name == pdrf6_* ]] && fields_list="all heightgrid"
  for fields in $fields_list; do
    for t in $threads_list; do
      if [[ $t == 1 ]]; then
        line=$(run_logged "$log" "$python" "$here/laz_bench.py" "$laz" --backend lazrs --fields "$fields" --repeat "$repeat")
      else
        line=$(run_logged "$log" "$python" "$here/laz_bench.py" "$laz" --backend lazrs-parallel \
          --threads "$t" --fields "$fields" --repeat "$repeat")
      fi
      record "$laz" lazrs "$fields" "$t" "$line"
      echo "lazrs ($fields) threads=$t: $(field points_per_s "$line") points/s"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
column -t -s $'\t' "$results" 2> /dev/null || cat "$results"
