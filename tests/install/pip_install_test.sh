#!/usr/bin/env bash
# `pip install SOURCE_DIR` into a fresh virtual environment (issue 37), as a Python user would, then
# `import heightgrid` from outside the source tree and grid the sample through it.
# Usage: pip_install_test.sh SOURCE_DIR DATA_DIR [PYTHON]   (PYTHON: Debian's /usr/bin/python3)
#
# Kept cheap for CI (2 cores, no GPU): a CPU-only build (HEIGHTGRID_CUDA=OFF) of the module's target
# alone (pyproject.toml), without the optimiser, HEIGHTGRID_PIP_JOBS (default 2) compiles at a time,
# in a temporary build directory. The venv sees Debian's site-packages (--system-site-packages), so
# numpy is Debian's python3-numpy, the one the module is built for elsewhere; pip downloads only the
# build requirement (scikit-build-core and its dependencies) from PyPI. Exits 77 (a SKIP in ctest)
# when that download fails, i.e. PyPI (or pip's configured index) cannot be reached.
set -euo pipefail
src=$(cd "$1" && pwd) data=$(cd "$2" && pwd) python=${3:-/usr/bin/python3}
jobs=${HEIGHTGRID_PIP_JOBS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heightgrid-pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # nothing of the source tree is importable from here
unset PYTHONPATH PYTHONHOME PIP_USER PIP_TARGET PIP_PREFIX
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

echo "pip_install_test: $python -m venv --system-site-packages $tmp/venv"
if ! "$python" -m venv --system-site-packages "$tmp/venv" > venv.log 2>&1; then
  cat venv.log
  echo "pip_install_test: FAILED: could not make a venv (Debian: apt-get install python3-venv)"
  exit 1
fi
py=$tmp/venv/bin/python

# Can pip reach PyPI? Fetch the build requirement the way the build will (pip's own configuration:
# index, proxy, certificates). A failure that is not a network one fails the test.
if ! "$py" -m pip download --no-deps --timeout 20 --retries 1 -d probe "scikit-build-core>=0.10" > probe.log 2>&1; then
  tail -n 5 probe.log
  if grep -qE 'NewConnectionError|ConnectTimeout|ReadTimeout|ProxyError|Connection (refused|reset)|Network is unreachable|name resolution|Name or service not known|Could not fetch URL' probe.log; then
    echo "pip_install_test: SKIP: pip cannot reach PyPI to download scikit-build-core, so pip install cannot build"
    exit 77
  fi
  echo "pip_install_test: FAILED: pip download scikit-build-core (log above)"
  exit 1
fi

echo "pip_install_test: pip install $src (CPU only, -j$jobs, build dir $tmp/build)"
start=$SECONDS
if ! CMAKE_BUILD_PARALLEL_LEVEL=$jobs "$py" -m pip install \
    --config-settings=cmake.define.HEIGHTGRID_CUDA=OFF \
    "--config-settings=cmake.define.CMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" \
    "--config-settings=build-dir=$tmp/build" \
    "$src" > pip.log 2>&1; then
  tail -n 60 pip.log
  echo "pip_install_test: FAILED: pip install $src (log above)"
  exit 1
fi
grep -E '^Successfully installed' pip.log || true
echo "pip_install_test: pip install took $((SECONDS - start)) s"

# Only the module was installed: no CLI or man page in the venv.
for f in venv/bin/heightgrid venv/share/man/man1/heightgrid.1; do
  if [ -e "$f" ]; then echo "pip_install_test: FAILED: $f installed by pip"; exit 1; fi
done

"$py" - "$data/sample.xyz" <<'EOF'
import importlib.metadata, math, os, sys, sysconfig

import numpy as np
import heightgrid

sample = sys.argv[1]
where = os.path.dirname(os.path.realpath(heightgrid.__file__))
site = os.path.realpath(sysconfig.get_paths()["platlib"])
assert where == site, f"heightgrid imported from {heightgrid.__file__}, not the venv's {site}"
version = importlib.metadata.version("heightgrid")
assert heightgrid.__version__ == version, (heightgrid.__version__, version)
print(f"pip_install_test: import heightgrid {version} from {heightgrid.__file__} (numpy {np.__version__})")

# data/README.md: the sample at 1 m is 3 x 2 cells from (500000, 4100002), 14 points.
want_count = np.array([[4, 1, 0], [2, 4, 3]])
want_range = np.array([[2.5, 0.0, math.nan], [0.5, 2.5, 2.25]])
pts = np.loadtxt(sample, comments="#", skiprows=2)
for how, r in (("grid_files", heightgrid.grid_files([sample], res=1, metrics=["range", "count"], device="cpu")),
               ("grid", heightgrid.grid(pts[:, 0].copy(), pts[:, 1].copy(), pts[:, 2].copy(), res=1,
                                        metrics=["range", "count"], device="cpu"))):
    assert tuple(r["geotransform"]) == (500000, 1, 0, 4100002, 0, -1), (how, r["geotransform"])
    assert (r["width"], r["height"]) == (3, 2), (how, r["width"], r["height"])
    np.testing.assert_array_equal(r["bands"]["count"], want_count, err_msg=how)
    np.testing.assert_allclose(r["bands"]["range"], want_range, rtol=0, atol=1e-6, equal_nan=True, err_msg=how)
    print(f"pip_install_test: heightgrid.{how} on {os.path.basename(sample)}: "
          f"{int(r['bands']['count'].sum())} points in {r['non_empty']} cells, range {r['bands']['range'].tolist()}")
EOF
echo "pip_install_test: OK"
