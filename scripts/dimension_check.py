#!/usr/bin/env python3
"""Developer cross-check of `heightgrid grid --dimension` against laspy (not a project dependency:
`pip install laspy lazrs`), for every dimension of every LAS/LAZ file given:

    python3 scripts/dimension_check.py BUILD_DIR/app/heightgrid FILE.las|FILE.laz ...

For each dimension heightgrid lists for a file, grids it (`--keep-all --metrics max --res 5`,
CPU), reads the GeoTIFF back through `gdal_translate -of XYZ` and compares every non-empty cell
with the maximum of laspy's values of the points in that cell (floor of the offset from the
grid's origin, clamped to the grid), rounded to float as heightgrid's bands are. Prints one
line a file ("all equal" or the dimensions that differ); exits 1 if any differs.
An independent reader is the point: comparing two heightgrid builds missed that layered LAZ
gridded zeros for intensity, GPS time, RGB... (fixed 2026-11-26)."""
import os
import re
import subprocess
import sys
import tempfile

import laspy
import numpy as np

RES = 5.0
# heightgrid's (PDAL's) dimension names -> laspy's.
LASPY_NAME = {"X": "x", "Y": "y", "Z": "z", "Intensity": "intensity", "ReturnNumber": "return_number",
              "NumberOfReturns": "number_of_returns", "Classification": "classification",
              "ScanAngleRank": "scan_angle_rank", "UserData": "user_data", "PointSourceId": "point_source_id",
              "GpsTime": "gps_time", "Red": "red", "Green": "green", "Blue": "blue", "Infrared": "nir"}


def dimensions(exe, path, tmp):
    """The dimensions heightgrid lists for `path` (from its error for an unknown one)."""
    r = subprocess.run([exe, "grid", path, "-o", os.path.join(tmp, "x.tif"), "--res", "5", "--overwrite",
                        "--dimension", "NoSuchDimension"], capture_output=True, text=True)
    m = re.search(r"has (.*)\)", r.stderr)
    return [d.strip() for d in m.group(1).split(",")] if m else []


def gridded(exe, path, dimension, tmp):
    """(x0, y0, cols, rows, values) of the max band heightgrid writes, or an error string."""
    tif, xyz = os.path.join(tmp, "o.tif"), os.path.join(tmp, "o.xyz")
    r = subprocess.run([exe, "grid", path, "-o", tif, "--res", str(RES), "--overwrite", "--device", "cpu",
                        "--keep-all", "--dimension", dimension, "--metrics", "max", "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"heightgrid failed: {r.stderr.strip()[-200:]}"
    info = subprocess.run(["gdalinfo", tif], capture_output=True, text=True).stdout
    origin = re.search(r"Origin = \(([-0-9.e+]+),([-0-9.e+]+)\)", info)
    size = re.search(r"Size is (\d+), (\d+)", info)
    cols, rows = int(size.group(1)), int(size.group(2))
    if rows < 2:
        return None  # gdal_translate's XYZ driver needs two rows
    subprocess.run(["gdal_translate", "-q", "-of", "XYZ", tif, xyz], check=True)
    values = np.loadtxt(xyz, ndmin=2)[:, 2].reshape(rows, cols)
    return float(origin.group(1)), float(origin.group(2)), cols, rows, values


def laspy_values(las, dimension):
    name = LASPY_NAME.get(dimension, dimension)
    if name in ("x", "y", "z"):
        return np.asarray(getattr(las, name), dtype=np.float64)
    if name == "scan_angle_rank" and las.header.point_format.id >= 6:
        return np.asarray(las["scan_angle"], dtype=np.float64) * 0.006  # degrees, as LAS 1.4 scales it
    return np.asarray(las[name], dtype=np.float64)


def check(exe, path, tmp):
    las = laspy.read(path)
    names = dimensions(exe, path, tmp)
    problems = []
    for d in names:
        g = gridded(exe, path, d, tmp)
        if g is None:
            continue
        if isinstance(g, str):
            problems.append(f"{d}: {g}")
            continue
        x0, y0, cols, rows, got = g
        col = np.clip(np.floor((np.asarray(las.x) - x0) / RES).astype(int), 0, cols - 1)
        row = np.clip(np.floor((y0 - np.asarray(las.y)) / RES).astype(int), 0, rows - 1)
        want = np.full((rows, cols), -np.inf)
        np.maximum.at(want, (row, col), laspy_values(las, d))
        filled = np.isfinite(want)
        want[filled] = want[filled].astype(np.float32)
        differ = filled & (got != want)
        if differ.any():
            problems.append(f"{d}: {differ.sum()} of {filled.sum()} cells differ "
                            f"(heightgrid {got[differ][0]}, laspy {want[differ][0]})")
    print(f"{path} (PDRF {las.header.point_format.id}, {len(names)} dimensions): "
          + ("; ".join(problems) if problems else "all equal"))
    return not problems


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        ok = [check(exe, path, tmp) for path in sys.argv[2:]]
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
