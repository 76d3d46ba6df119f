#!/usr/bin/env python3
"""Developer cross-check of the native LAS reader and writer against laspy (not a project
dependency: `pip install laspy`). Run by hand:

    python3 tests/io/laspy_check.py BUILD_DIR/bench/las_read_bench [REAL_DATA_DIR]

1. Files written by our writer (every version/format it supports, with CRS records, extra
   bytes, EVLRs) must be read by laspy exactly as we wrote them: coordinates, every attribute,
   header counts and bounds, CRS records.
2. Files written by laspy (every point format 0-10 in LAS 1.2/1.3/1.4, extra bytes) must be
   read by our reader exactly as laspy reads them.
3. Every uncompressed real file must read identically through both.
Exits 1 on the first difference.
"""

import os
import subprocess
import sys
import tempfile

import laspy
import numpy as np

# The packed records las_read_bench writes (see las_read_bench.cpp).
EXPECTED = np.dtype([("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("intensity", "<u2"),
                     ("return_number", "u1"), ("number_of_returns", "u1"),
                     ("classification", "u1"), ("flags", "u1"), ("gps_time", "<f8"),
                     ("red", "<u2"), ("green", "<u2"), ("blue", "<u2")])
DUMP = np.dtype([("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("classification", "u1"),
                 ("return_number", "u1"), ("number_of_returns", "u1"), ("flags", "u1")])

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("  FAIL:", what)
    return ok


def flags_of(las):
    """point_flag bits (synthetic 1, key-point 2, withheld 4, overlap 8) from laspy's fields."""
    f = (np.asarray(las.synthetic, dtype=np.uint8)
         | (np.asarray(las.key_point, dtype=np.uint8) << 1)
         | (np.asarray(las.withheld, dtype=np.uint8) << 2))
    if las.header.point_format.id >= 6:
        f |= np.asarray(las.overlap, dtype=np.uint8) << 3
    return f


def dump_with_ours(tool, path, workdir):
    out = os.path.join(workdir, "dump.bin")
    res = subprocess.run([tool, "dump", path, out], check=True, capture_output=True, text=True)
    info = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
    return np.fromfile(out, dtype=DUMP), info


def compare_reader(tool, path, workdir, label):
    las = laspy.read(path)
    ours, info = dump_with_ours(tool, path, workdir)
    ok = check(len(ours) == len(las.points), f"{label}: {len(ours)} points, laspy {len(las.points)}")
    if ok:
        for field, theirs in (("x", las.x), ("y", las.y), ("z", las.z),
                              ("classification", las.classification),
                              ("return_number", las.return_number),
                              ("number_of_returns", las.number_of_returns),
                              ("flags", flags_of(las))):
            a = ours[field]
            b = np.asarray(theirs).astype(a.dtype)
            check(np.array_equal(a, b), f"{label}: {field} differs ({np.count_nonzero(a != b)} points)")
    return las, info


def our_files(tool, workdir):
    print("1. our writer -> laspy")
    specs = [(f, 2) for f in (0, 1, 3)] + [(f, 4) for f in (0, 1, 3, 6)]
    for fmt, minor in specs:
        for variant in ("plain", "crs", "extra", "evlr"):
            if variant == "evlr" and minor != 4:
                continue
            label = f"LAS 1.{minor} PDRF {fmt} {variant}"
            path = os.path.join(workdir, f"ours_{fmt}_{minor}_{variant}.las")
            expected_path = path + ".expected"
            args = [tool, "write", path, "5000", str(fmt), str(minor), "--expected", expected_path]
            if variant in ("crs", "evlr"):
                args += ["--crs", "EPSG:32615"]
            if variant == "extra":
                args += ["--extra-bytes", "7"]
            if variant == "evlr":
                args += ["--evlr"]
            subprocess.run(args, check=True)
            exp = np.fromfile(expected_path, dtype=EXPECTED)
            las = laspy.read(path)
            h = las.header
            check(h.version.minor == minor and h.point_format.id == fmt, f"{label}: version/format")
            check(h.point_count == len(exp), f"{label}: header count {h.point_count}")
            for field in ("x", "y", "z"):
                check(np.array_equal(np.asarray(getattr(las, field)), exp[field]), f"{label}: {field}")
            check(np.array_equal(np.asarray(las.intensity), exp["intensity"]), f"{label}: intensity")
            check(np.array_equal(np.asarray(las.return_number), exp["return_number"]), f"{label}: return number")
            check(np.array_equal(np.asarray(las.number_of_returns), exp["number_of_returns"]),
                  f"{label}: number of returns")
            check(np.array_equal(np.asarray(las.classification), exp["classification"]), f"{label}: classification")
            check(np.array_equal(flags_of(las), exp["flags"]), f"{label}: flags")
            if fmt != 0:
                check(np.array_equal(np.asarray(las.gps_time), exp["gps_time"]), f"{label}: gps time")
            if fmt == 3:
                for c in ("red", "green", "blue"):
                    check(np.array_equal(np.asarray(getattr(las, c)), exp[c]), f"{label}: {c}")
            check(np.array_equal(h.mins, [exp["x"].min(), exp["y"].min(), exp["z"].min()]), f"{label}: header mins")
            check(np.array_equal(h.maxs, [exp["x"].max(), exp["y"].max(), exp["z"].max()]), f"{label}: header maxs")
            if minor == 4:
                counts = np.bincount(exp["return_number"], minlength=16)[1:16]
                check(np.array_equal(h.number_of_points_by_return[:15], counts), f"{label}: points by return")
            if variant == "extra":
                check(las.point_format.num_extra_bytes == 7, f"{label}: extra bytes {las.point_format.num_extra_bytes}")
            if variant in ("crs", "evlr"):
                _, info = dump_with_ours(tool, path, workdir)
                if minor == 4:
                    records = list(h.vlrs) + list(h.evlrs or [])
                    wkts = [v for v in records if v.record_id == 2112 and v.user_id == "LASF_Projection"]
                    check(len(wkts) == 1 and wkts[0].string.rstrip("\0") == info["crs_wkt"],
                          f"{label}: laspy's WKT record is the WKT we report")
                    in_evlr = any(v.record_id == 2112 for v in (h.evlrs or []))
                    check(in_evlr == (variant == "evlr"), f"{label}: WKT in EVLR = {in_evlr}")
                else:
                    geo = [v for v in h.vlrs if v.record_id == 34735]
                    check(len(geo) == 1 and any(k.id == 3072 and k.value_offset == 32615 for k in geo[0].geo_keys),
                          f"{label}: GeoTIFF keys with ProjectedCSTypeGeoKey 32615")
            compare_reader(tool, path, workdir, label + " (our reader)")
            print("  ok:", label)


def laspy_files(tool, workdir):
    print("2. laspy writer -> our reader")
    rng = np.random.default_rng(7)
    for minor, formats in ((2, range(0, 4)), (3, range(0, 6)), (4, range(0, 11))):
        for fmt in formats:
            for extra in (False, True):
                label = f"laspy LAS 1.{minor} PDRF {fmt}{' + extra bytes' if extra else ''}"
                header = laspy.LasHeader(point_format=fmt, version=f"1.{minor}")
                if extra:
                    header.add_extra_dims([laspy.ExtraBytesParams(name="height", type=np.float32),
                                           laspy.ExtraBytesParams(name="code", type=np.uint16)])
                header.scales = np.array([0.001, 0.01, 0.0001])
                header.offsets = np.array([-1000.5, 5e6, 12.0])
                n = 3001
                las = laspy.LasData(header)
                las.X = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
                las.Y = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
                las.Z = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
                max_returns = 15 if fmt >= 6 else 7
                las.number_of_returns = rng.integers(1, max_returns + 1, n)
                las.return_number = rng.integers(0, max_returns + 1, n)
                las.classification = rng.integers(0, 256 if fmt >= 6 else 32, n)
                las.synthetic = rng.integers(0, 2, n)
                las.key_point = rng.integers(0, 2, n)
                las.withheld = rng.integers(0, 2, n)
                las.edge_of_flight_line = rng.integers(0, 2, n)
                las.scan_direction_flag = rng.integers(0, 2, n)
                if fmt >= 6:
                    las.overlap = rng.integers(0, 2, n)
                    las.scanner_channel = rng.integers(0, 4, n)
                las.intensity = rng.integers(0, 65536, n)
                if extra:
                    las.height = rng.random(n).astype(np.float32)
                    las.code = rng.integers(0, 65536, n)
                path = os.path.join(workdir, f"laspy_{minor}_{fmt}_{int(extra)}.las")
                las.write(path)
                compare_reader(tool, path, workdir, label)
                print("  ok:", label)


def real_files(tool, real_dir, workdir):
    print("3. real files: laspy vs our reader")
    for root, _, files in os.walk(real_dir):
        for name in sorted(files):
            if name.endswith(".las"):
                path = os.path.join(root, name)
                compare_reader(tool, path, workdir, os.path.relpath(path, real_dir))
                print("  ok:", os.path.relpath(path, real_dir))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    tool = os.path.abspath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    real_dir = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
        "HEIGHTGRID_REAL_DATA_DIR", os.path.join(here, "..", "..", "..", "shared", "data", "real"))
    print("laspy", laspy.__version__)
    with tempfile.TemporaryDirectory(prefix="heightgrid-laspy-") as workdir:
        our_files(tool, workdir)
        laspy_files(tool, workdir)
        if os.path.isdir(real_dir):
            real_files(tool, real_dir, workdir)
        else:
            print("3. skipped:", real_dir, "not present")
    print("FAILED" if failures else "all checks passed", f"({failures} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
