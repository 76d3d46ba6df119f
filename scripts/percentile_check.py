#!/usr/bin/env python3
"""Developer cross-check of heightgrid's percentile metrics against numpy (not a project
dependency: needs numpy, GDAL's Python bindings, and laspy + lazrs for LAS/LAZ inputs).

    python3 scripts/percentile_check.py build/app/heightgrid [REAL_DATA_DIR] [--device=cpu|gpu]

For every LAS/LAZ file of REAL_DATA_DIR and for synthetic LAS files made here (ties, one-point
cells, empty cells, one cell of 10^7 points), runs
    heightgrid grid FILE -o OUT.tif --res R --metrics p5,median,p95,p2.5,prange,count --keep-all
(every point, as laspy reads them) and checks every cell against numpy: points read with laspy (x = X * scale + offset), binned with
heightgrid's rule (column = floor((x - x0) / res), row = floor((y0 - y) / res) from the output's
geotransform), numpy.percentile(z, p) per cell (method 'linear'), prange = P95 - P5 in float64,
each rounded once to float32, compared bit for bit. Exits 1 on the first difference.
"""

import os
import subprocess
import sys
import tempfile

import laspy
import numpy as np
from osgeo import gdal

gdal.UseExceptions()
PERCENTILES = [5.0, 50.0, 95.0, 2.5]
METRICS = "p5,median,p95,p2.5,prange,count"


def reference(x, y, z, gt, cols, rows):
    x0, xres, y0, yres = gt[0], gt[1], gt[3], -gt[5]
    c = np.floor((x - x0) / xres)
    r = np.floor((y0 - y) / yres)
    inside = (c >= 0) & (c < cols) & (r >= 0) & (r < rows)
    cell = (r[inside].astype(np.int64) * cols + c[inside].astype(np.int64))
    zs = z[inside]
    order = np.lexsort((zs, cell))
    cell, zs = cell[order], zs[order]
    bands = np.full((len(PERCENTILES) + 2, rows * cols), np.nan, dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]]) if len(cell) else np.array([], dtype=np.int64)
    ends = np.r_[starts[1:], len(cell)]
    out = [np.full(rows * cols, np.nan, dtype=np.float32) for _ in range(len(PERCENTILES) + 1)]
    count = np.zeros(rows * cols, dtype=np.float64)
    for s, e in zip(starts, ends):
        k = cell[s]
        v = zs[s:e]
        ps = np.percentile(v, PERCENTILES)
        for i in range(len(PERCENTILES)):
            out[i][k] = np.float32(ps[i])
        out[len(PERCENTILES)][k] = np.float32(ps[2] - ps[0])
        count[k] = e - s
    return out, count


def check(exe, path, res, device, tmp):
    out_tif = os.path.join(tmp, "out.tif")
    # --keep-all: every point, as laspy reads them (the default filter drops noise and withheld points).
    cmd = [exe, "grid", path, "-o", out_tif, "--res", str(res), "--metrics", METRICS, "--overwrite", "--keep-all",
           "--device", device]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ds = gdal.Open(out_tif)
    gt = ds.GetGeoTransform()
    cols, rows = ds.RasterXSize, ds.RasterYSize
    got = [ds.GetRasterBand(b + 1).ReadAsArray().astype(np.float32).ravel() for b in range(ds.RasterCount)]
    las = laspy.read(path)
    x, y, z = np.asarray(las.x), np.asarray(las.y), np.asarray(las.z)
    want, count = reference(x, y, z, gt, cols, rows)
    # Band order of METRICS: p5, median, p95, p2.5, prange, count.
    order = [0, 1, 2, 3, 4]
    got_count = np.nan_to_num(got[5].astype(np.float64), nan=0.0)
    if not np.array_equal(got_count, count):
        bad = np.flatnonzero(got_count != count)[0]
        return f"count differs at cell {bad}: {got_count[bad]} vs numpy {count[bad]} (a filter?)"
    names = ["p5", "median", "p95", "p2.5", "prange"]
    for i, j in enumerate(order):
        a = got[i].view(np.uint32)
        b = want[j].view(np.uint32)
        same = (a == b) | (np.isnan(got[i]) & np.isnan(want[j]))
        if not same.all():
            bad = np.flatnonzero(~same)[0]
            return f"{names[i]} differs at cell {bad}: {got[i][bad]!r} vs numpy {want[j][bad]!r}"
    return f"ok ({int(count.sum())} points, {int((count > 0).sum())} cells)"


def synthetic(tmp):
    """LAS files: ties (integer heights), one-point and empty cells, and one cell of 10^7 points."""
    rng = np.random.default_rng(7)
    files = []
    def write(name, x, y, z, scale=0.01):
        header = laspy.LasHeader(point_format=1, version="1.2")
        header.scales = np.array([0.01, 0.01, scale])
        header.offsets = np.array([0.0, 0.0, 0.0])
        las = laspy.LasData(header)
        las.x, las.y, las.z = x, y, z
        path = os.path.join(tmp, name)
        las.write(path)
        files.append((path, 1.0))
    n = 200000
    write("ties.las", rng.uniform(0, 100, n), rng.uniform(0, 100, n), rng.integers(0, 4, n).astype(float), scale=1.0)
    # Sparse: many one-point cells and empty cells between them.
    m = 3000
    write("sparse.las", rng.integers(0, 200, m) + 0.5, rng.integers(0, 200, m) + 0.5, rng.normal(10, 3, m))
    big = 10_000_000
    x = np.r_[np.full(big, 0.5), rng.uniform(0, 4, 1000)]
    y = np.r_[np.full(big, 0.5), rng.uniform(0, 4, 1000)]
    write("bigcell.las", x, y, rng.normal(50, 20, big + 1000))
    return files


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--device")]
    device = "cpu"
    for a in sys.argv[1:]:
        if a.startswith("--device="):
            device = a.split("=", 1)[1]
    exe = args[0]
    real = args[1] if len(args) > 1 else None
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = synthetic(tmp)
        if real:
            for root, _, names in sorted(os.walk(real)):
                for name in sorted(names):
                    if name.lower().endswith((".las", ".laz")):
                        cases.append((os.path.join(root, name), 5.0))
        for path, res in cases:
            try:
                msg = check(exe, path, res, device, tmp)
            except subprocess.CalledProcessError as e:
                msg = f"heightgrid failed ({e.returncode})"
            print(f"{os.path.basename(path)}: {msg}")
            failures += not msg.startswith("ok")
    print(f"{len(cases) - failures}/{len(cases)} files bit-identical to numpy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
