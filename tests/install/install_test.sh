#!/usr/bin/env bash
# cmake --install into a temporary prefix, then run what was installed: the CLI grids the sample,
# the man page is in place, and (when built) the Python module imports from the prefix.
# Usage: install_test.sh BUILD_DIR DATA_DIR PYTHON(or "")
set -euo pipefail
build=$1 data=$2 python=${3:-}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > "$prefix/install.log"
test -x "$prefix/bin/heightgrid" || { echo "no $prefix/bin/heightgrid"; cat "$prefix/install.log"; exit 1; }
test -s "$prefix/share/man/man1/heightgrid.1" || { echo "no man page"; exit 1; }
"$prefix/bin/heightgrid" --version | grep -q '^heightgrid '
"$prefix/bin/heightgrid" grid "$data/sample.xyz" -o "$prefix/s.tif" -tr 1 1 --device cpu -q
test -s "$prefix/s.tif"
if [ -n "$python" ]; then
  PYTHONPATH="$prefix/lib/python3/dist-packages" "$python" -c '
import heightgrid, sys
r = heightgrid.grid_files([sys.argv[1]], res=1, metrics=["count"], device="cpu")
assert int(r["bands"]["count"].sum()) == 14, r
print("python module from", heightgrid.__file__)' "$data/sample.xyz"
fi
echo "installed and ran from $prefix"
