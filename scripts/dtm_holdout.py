#!/usr/bin/env python3
"""How well the one-line DTM (`heightgrid grid FILE --classes 2 --metrics min --fill tin`) predicts
ground points it did not see (issue #38): every tenth ground point (class 2) of FILE is held out,
the rest is written to a temporary LAS file and gridded, and the DTM is sampled at the held-out
points (bilinear between cell centres, the rule of --ground). Prints the held-out count, the RMS,
the mean and the 95th percentile of |z - DTM| in the file's z units.

  dtm_holdout.py FILE --res R [--res R2 ...] [--exe build/app/heightgrid] [--max-edge E]

Needs laspy (lazrs for LAZ), numpy and GDAL's command-line tools.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import laspy
import numpy as np


def read_band(tif, scratch):
    info = json.loads(subprocess.run(["gdalinfo", "-json", tif], check=True, capture_output=True, text=True).stdout)
    cols, rows = info["size"]
    raw = os.path.join(scratch, "dtm.bin")
    subprocess.run(["gdal_translate", "-q", "-of", "ENVI", "-b", "1", tif, raw], check=True)
    return info["geoTransform"], np.fromfile(raw, dtype="<f4").reshape(rows, cols).astype(np.float64)


def bilinear(gt, v, x, y):
    """--ground's rule: NaN outside the raster or next to an empty cell."""
    rows, cols = v.shape
    u = (x - gt[0]) / gt[1]
    w = (y - gt[3]) / gt[5]
    inside = (u >= 0) & (u <= cols) & (w >= 0) & (w <= rows)
    fu = np.clip(u - 0.5, 0, cols - 1)
    fw = np.clip(w - 0.5, 0, rows - 1)
    c0 = np.floor(fu).astype(int)
    r0 = np.floor(fw).astype(int)
    c1 = np.minimum(c0 + 1, cols - 1)
    r1 = np.minimum(r0 + 1, rows - 1)
    tu, tw = fu - c0, fw - r0
    top = v[r0, c0] + (v[r0, c1] - v[r0, c0]) * tu
    bottom = v[r1, c0] + (v[r1, c1] - v[r1, c0]) * tu
    out = top + (bottom - top) * tw
    out[~inside] = np.nan
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--res", type=float, action="append", required=True)
    ap.add_argument("--max-edge", type=float, default=0.0)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--exe", default=os.path.join(here, "..", "build", "app", "heightgrid"))
    args = ap.parse_args()
    las = laspy.read(args.file)
    ground = np.flatnonzero(np.asarray(las.classification) == 2)
    held = ground[::10]
    keep = np.ones(len(las.points), dtype=bool)
    keep[held] = False
    x, y, z = np.asarray(las.x)[held], np.asarray(las.y)[held], np.asarray(las.z)[held]
    with tempfile.TemporaryDirectory() as scratch:
        rest = os.path.join(scratch, "rest.las")
        out = laspy.LasData(las.header)
        out.points = las.points[keep]
        out.write(rest)
        for res in args.res:
            dtm = os.path.join(scratch, "dtm.tif")
            cmd = [args.exe, "grid", rest, "--classes", "2", "--metrics", "min", "--fill", "tin", "--res", f"{res:g}",
                   "-o", dtm, "--overwrite", "-q", "--device", "cpu"]
            if args.max_edge > 0:
                cmd += ["--fill-max-edge", f"{args.max_edge:g}"]
            subprocess.run(cmd, check=True)
            gt, v = read_band(dtm, scratch)
            d = z - bilinear(gt, v, x, y)
            ok = ~np.isnan(d)
            print(f"{os.path.basename(args.file)} --res {res:g}: {len(ground)} ground points, {ok.sum()} of "
                  f"{len(held)} held out on the DTM: RMS {np.sqrt(np.mean(d[ok] ** 2)):.3f}, mean {np.mean(d[ok]):+.3f}, "
                  f"p95 |d| {np.percentile(np.abs(d[ok]), 95):.3f} (z units)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
