#!/usr/bin/env bash
# Installs the Debian packages heightgrid builds and tests with, if any are missing.
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -euo pipefail
pkgs=(cmake make g++ pkg-config libgdal-dev gdal-bin libspdlog-dev libfmt-dev libcli11-dev
      libgtest-dev googletest clang libclang-rt-14-dev libomp-dev gnuplot-nox nlohmann-json3-dev libzstd-dev
      libopenmpi-dev openmpi-bin pybind11-dev python3-dev python3-numpy python3-scipy python3-gdal python3-venv dpkg-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "heightgrid: installing missing packages: ${missing[*]}" >&2
  bash -c "$cmd"
else
  echo "heightgrid: missing Debian packages: ${missing[*]}" >&2
  echo "install them with:  sudo bash -c '$cmd'" >&2
  exit 1
fi
