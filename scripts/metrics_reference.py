#!/usr/bin/env python3
"""The shape metrics, density and tagged counts of `heightgrid grid` against an independent reference:
numpy and scipy over the points of each cell (issue #38).

For each input (the LAS files of ../shared/data/real, LAZ too when laspy can read them, and synthetic
clouds written here), heightgrid grids the points with --keep-all and

  count, skewness, kurtosis, cover (--cover-above H), above:A, zbin:..., entropy, density,
  count:2, count:1,3,4,5, first, last

and the script puts the same points in the same cells (col = floor((x - x0) / xres), row =
floor((y0 - y) / yres), the count band must agree exactly) and checks every cell:
  - count, cover, above, zbin and density bit for bit: float32(numpy.mean(z > H)) and so on;
  - count:CLASSES, first and last exactly: the cell's points of those classes (ASPRS classification
    as the record stores it), of return number <= 1, of return number >= number of returns;
  - skewness and kurtosis (scipy.stats.skew / kurtosis, their defaults: biased, Fisher) to the
    rounding of a float64 within 64 eps of scipy's, relative to the scale of the moment sums
    (mean |z - mean|^3 / m2^1.5, mean (z - mean)^4 / m2^2) times the centring's amplification
    (1 + |mean| / sqrt(m2)): heightgrid sums in sorted order, numpy pairwise, and where the sums
    cancel (a symmetric cell's skewness, a flat cell 800 m up) two orders differ by that much;
  - entropy (lidR's entropy(z, by = 1), written here in numpy) within 2 float32 ulp;
  - nodata exactly where the reference has no value (empty cells, no spread, lidR's NA rules).
Prints one line per input and exits non-zero on the first input that differs. Needs numpy, scipy and
GDAL's command-line tools (gdalinfo, gdal_translate); laspy for LAZ inputs (skipped without it).

  metrics_reference.py [--exe build/app/heightgrid] [--device cpu] [--real DIR] [--keep DIR] [--quick]

Without scipy it exits 77 (ctest's skip).
"""
import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import warnings

import numpy as np

try:
    from scipy import stats
except ImportError:
    print("metrics_reference.py: scipy is not importable (Debian: python3-scipy)")
    sys.exit(77)

HEIGHTS = dict(cover=2.0, above=5.0, zbin=[0.0, 1.0, 2.5, 10.0, 30.0])


def read_las(path):
    """x, y, z, class, return number, number of returns of every point of an uncompressed LAS file
    (or, through laspy, a LAZ file)."""
    if path.lower().endswith(".laz"):
        import laspy  # noqa: PLC0415 (optional)
        las = laspy.read(path)
        return (np.asarray(las.x), np.asarray(las.y), np.asarray(las.z), np.asarray(las.classification),
                np.asarray(las.return_number), np.asarray(las.number_of_returns))
    with open(path, "rb") as f:
        head = f.read(375)
        data_offset = struct.unpack_from("<I", head, 96)[0]
        record = struct.unpack_from("<H", head, 105)[0]
        count = struct.unpack_from("<I", head, 107)[0]
        scale = struct.unpack_from("<3d", head, 131)
        offset = struct.unpack_from("<3d", head, 155)
        minor = head[25]
        point_format = head[104] & 0x3F
        if minor >= 4 and count == 0:
            count = struct.unpack_from("<Q", head, 247)[0]
        f.seek(data_offset)
        raw = np.frombuffer(f.read(count * record), dtype=np.uint8).reshape(count, record)
    xyz = raw[:, :12].copy().view("<i4").reshape(count, 3).astype(np.float64)
    if point_format >= 6:  # the ASPRS layout of formats 6-10
        returns, number, classes = raw[:, 14] & 0x0F, raw[:, 14] >> 4, raw[:, 16]
    else:
        returns, number, classes = raw[:, 14] & 0x07, (raw[:, 14] >> 3) & 0x07, raw[:, 15] & 0x1F
    # LAS's rule, a multiply then an add in double, as heightgrid applies it.
    return tuple(xyz[:, k] * scale[k] + offset[k] for k in range(3)) + (classes, returns, number)


def write_las(path, x, y, z, scale=0.01, classes=None, returns=None):
    """A LAS 1.2 file of point format 0 (20-byte records) holding x, y, z at `scale`, the classes and
    (return number, number of returns) given (default: class 0, return 1 of 1)."""
    n = len(x)
    X = np.round(x / scale).astype("<i4")
    Y = np.round(y / scale).astype("<i4")
    Z = np.round(z / scale).astype("<i4")
    header = bytearray(227)
    header[0:4] = b"LASF"
    header[24], header[25] = 1, 2
    struct.pack_into("<H", header, 94, 227)
    struct.pack_into("<I", header, 96, 227)
    struct.pack_into("<I", header, 100, 0)
    header[104] = 0
    struct.pack_into("<H", header, 105, 20)
    struct.pack_into("<I", header, 107, n)
    struct.pack_into("<3d", header, 131, scale, scale, scale)
    struct.pack_into("<3d", header, 155, 0.0, 0.0, 0.0)
    xs, ys, zs = X * scale, Y * scale, Z * scale
    struct.pack_into("<6d", header, 179, xs.max(), xs.min(), ys.max(), ys.min(), zs.max(), zs.min())
    records = np.zeros((n, 20), dtype=np.uint8)
    records[:, 0:12] = np.stack([X, Y, Z], axis=1).view(np.uint8).reshape(n, 12)
    if returns is None:
        records[:, 14] = 0x09  # return 1 of 1
    else:
        records[:, 14] = (returns[0] & 0x07) | ((returns[1] & 0x07) << 3)
    if classes is not None:
        records[:, 15] = classes & 0x1F
    with open(path, "wb") as f:
        f.write(header)
        f.write(records.tobytes())


def synthetic(folder):
    """Clouds that reach the metrics' corners: canopy heights, ties, constant cells, negative
    heights, integer maxima (entropy's last break), cells of one or two points."""
    rng = np.random.default_rng(38)
    out = []
    n = 60000
    x, y = rng.uniform(0, 200, n), rng.uniform(0, 200, n)
    canopy = np.where(rng.uniform(size=n) < 0.3, rng.uniform(0, 0.5, n), rng.gamma(4.0, 4.0, n))
    out.append(("canopy", x, y, canopy))
    z = np.round(rng.normal(3.0, 2.0, n), 1)  # ties, negatives
    z[(x < 40) & (y < 40)] = 7.0  # constant cells: no skewness, kurtosis
    out.append(("ties", x, y, z))
    out.append(("integers", x, y, rng.integers(0, 12, n).astype(float)))
    m = 300
    out.append(("sparse", rng.uniform(0, 200, m), rng.uniform(0, 200, m), rng.uniform(-5, 40, m)))
    paths = []
    for name, xs, ys, zs in out:
        p = os.path.join(folder, f"synthetic_{name}.las")
        k = len(xs)
        # Classes 0-9 and returns r of n (0 <= r <= n <= 5: zeros and r > n too, as real files have).
        number = rng.integers(0, 6, k)
        write_las(p, xs, ys, zs, classes=rng.integers(0, 10, k), returns=(rng.integers(0, 7, k) % (number + 2), number))
        paths.append(p)
    return paths


def entropy_lidr(z):
    """lidR's entropy(z, by = 1): NaN where lidR gives NA."""
    top = z.max()
    if top < 2 or z.min() < 0:
        return np.nan
    k = int(np.ceil(top))
    binned = z[z < k]
    if binned.size == 0:
        return np.nan
    counts = np.bincount(np.floor(binned).astype(np.int64), minlength=k)
    p = counts[counts > 0] / binned.size
    return -np.sum(p * np.log(p)) / np.log(k)


def metrics_list():
    zbin = ",".join(f"{h:g}" for h in HEIGHTS["zbin"])
    return (f"count,skewness,kurtosis,cover,above:{HEIGHTS['above']:g},zbin:{zbin},entropy,density,"
            f"{','.join(TAGGED)}")


# The tagged counts: a band name and which points it counts (class, return number, number of returns).
TAGGED = {
    "count:2": lambda c, r, n: c == 2,
    "count:1,3,4,5": lambda c, r, n: np.isin(c, [1, 3, 4, 5]),
    "first": lambda c, r, n: r <= 1,
    "last": lambda c, r, n: r >= n,
}


def grid(exe, path, res, device, out):
    tif = out + ".tif"
    cmd = [exe, "grid", path, "-o", tif, "--res", str(res), "--keep-all", "--device", device, "--overwrite", "-q",
           "--metrics", metrics_list(), "--cover-above", f"{HEIGHTS['cover']:g}", "--co", "COMPRESS=NONE"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"heightgrid exited {run.returncode}: {run.stderr.strip()}")
    info = json.loads(subprocess.run(["gdalinfo", "-json", tif], check=True, capture_output=True, text=True).stdout)
    gt = info["geoTransform"]
    cols, rows = info["size"]
    raw = out + ".bin"
    subprocess.run(["gdal_translate", "-q", "-of", "ENVI", "-co", "INTERLEAVE=BSQ", tif, raw], check=True)
    bands = np.fromfile(raw, dtype="<f4").reshape(-1, rows, cols)
    names = [b.get("description", "") for b in info["bands"]]
    return gt, cols, rows, dict(zip(names, bands))


def float32_near(ours, ref64, tolerance):
    """ours (float32) is the rounding of a float64 within `tolerance` of ref64."""
    return np.float32(ref64 - tolerance) <= ours <= np.float32(ref64 + tolerance)


def check(exe, path, res, device, scratch):
    x, y, z, classes, returns, number = read_las(path)
    gt, cols, rows, bands = grid(exe, path, res, device, os.path.join(scratch, "out"))
    col = np.floor((x - gt[0]) / gt[1]).astype(np.int64)
    row = np.floor((gt[3] - y) / -gt[5]).astype(np.int64)
    inside = (col >= 0) & (col < cols) & (row >= 0) & (row < rows)
    cell = row[inside] * cols + col[inside]
    tagged = {name: np.bincount(cell[kind(classes[inside], returns[inside], number[inside])], minlength=cols * rows)
              for name, kind in TAGGED.items()}
    zs = z[inside]
    order = np.lexsort((zs, cell))
    cell, zs = cell[order], zs[order]
    starts = np.searchsorted(cell, np.arange(cols * rows + 1))
    area = abs(gt[1] * gt[5])
    flat = {k: v.reshape(-1) for k, v in bands.items()}
    zbins = list(zip(HEIGHTS["zbin"][:-1], HEIGHTS["zbin"][1:]))
    problems = []

    def expect(name, c, ok, got, want):
        if not ok and len(problems) < 5:
            problems.append(f"{name} cell {c}: heightgrid {got!r}, reference {want!r}")

    # Counts, and nodata in every other band of the empty cells, all at once.
    counts = np.bincount(cell, minlength=cols * rows)
    got_counts = np.nan_to_num(flat["count"], nan=0.0)  # a Float32 output: empty cells hold nodata
    for c in np.flatnonzero(got_counts != counts)[:5]:
        expect("count", int(c), False, flat["count"][c], int(counts[c]))
    empty = counts == 0
    for k, band in flat.items():
        if k != "count":
            for c in np.flatnonzero(empty & ~np.isnan(band))[:5]:
                expect(k, int(c), False, band[c], "nodata")
    cells = np.flatnonzero(~empty)
    for name, want in tagged.items():
        for c in np.flatnonzero(~empty & (flat[name] != want))[:5]:
            expect(name, int(c), False, flat[name][c], int(want[c]))
    for c in cells:
        v = zs[starts[c]:starts[c + 1]]
        n = v.size
        expect("density", c, flat["density"][c] == np.float32(n / area), flat["density"][c], n / area)
        cover = np.float32(np.mean(v > HEIGHTS["cover"]))
        expect("cover", c, flat["cover"][c] == cover, flat["cover"][c], cover)
        above = np.float32(np.mean(v > HEIGHTS["above"]))
        name = f"above:{HEIGHTS['above']:g}"
        expect(name, c, flat[name][c] == above, flat[name][c], above)
        for lo, hi in zbins:
            name = f"zbin:{lo:g}..{hi:g}"
            share = np.float32(np.mean((v >= lo) & (v < hi)))
            expect(name, c, flat[name][c] == share, flat[name][c], share)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's note on nearly identical values: NaN is checked
            skew = stats.skew(v) if n > 1 else np.nan
            kurt = stats.kurtosis(v) if n > 1 else np.nan
        # The sums of (z - mean)^k cancel: two summation orders agree to a few ulp of the sum of
        # their terms' magnitudes, not of the result (a symmetric cell's skewness is rounding noise).
        d = v - v.mean()
        m2 = np.mean(d * d)
        scale = {"skewness": np.mean(np.abs(d) ** 3) / m2 ** 1.5 if m2 > 0 else 0.0,
                 "kurtosis": np.mean(d ** 4) / m2 ** 2 if m2 > 0 else 0.0}
        # Centring z - mean amplifies the mean's rounding by |mean| / spread.
        centring = 1.0 + (abs(v.mean()) / np.sqrt(m2) if m2 > 0 else 0.0)
        for name, ref in (("skewness", skew), ("kurtosis", kurt)):
            got = flat[name][c]
            tolerance = 64 * np.finfo(np.float64).eps * scale[name] * centring
            ok = np.isnan(got) if np.isnan(ref) else (not np.isnan(got) and float32_near(got, ref, tolerance))
            expect(name, c, ok, got, ref)
        ent = entropy_lidr(v)
        got = flat["entropy"][c]
        ok = np.isnan(got) if np.isnan(ent) else abs(float(got) - ent) <= 2 * np.spacing(np.float32(ent))
        expect("entropy", c, ok, got, ent)
    checked = cells.size
    return checked, problems


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=os.path.join(here, "..", "build", "app", "heightgrid"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--real", default=os.path.join(here, "..", "..", "shared", "data", "real"))
    ap.add_argument("--keep", help="write the synthetic clouds here (default: a temporary folder)")
    ap.add_argument("--quick", action="store_true",
                    help="the synthetic clouds and the real LAS files of fewer than 20,000 cells (for CI)")
    args = ap.parse_args()
    try:
        import laspy  # noqa: F401,PLC0415
        with_laz = True
    except ImportError:
        with_laz = False
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or scratch
        os.makedirs(folder, exist_ok=True)
        inputs = [(p, 4.0 if args.quick else 2.0) for p in synthetic(folder)]
        real = sorted(glob.glob(os.path.join(args.real, "*", "*.las")))
        if args.quick:
            real = [p for p in real if "autzen" not in p and "certainty3d" not in p]
        elif with_laz:
            real += sorted(glob.glob(os.path.join(args.real, "*", "*.laz")))
        else:
            print("laspy is not importable: the LAZ files of", args.real, "are skipped")
        # Cells of a few metres: most hold tens of points.
        inputs += [(p, 5.0 if "autzen" in p or "Topography" in p else 2.0) for p in real]
        for path, res in inputs:
            try:
                checked, problems = check(args.exe, path, res, args.device, scratch)
            except (subprocess.CalledProcessError, RuntimeError) as e:
                print(f"{os.path.basename(path)}: heightgrid failed ({e})")
                failed = True
                continue
            status = "ok" if not problems else "DIFFERS"
            print(f"{status}: {path} --res {res:g}: {checked} non-empty cells, every metric as the reference"
                  if not problems else f"{status}: {path}: " + "; ".join(problems))
            failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
