#!/usr/bin/env python3
"""What a GPU Python user gets for the range band, next to heightgrid, on the same points (issue #7).

1. Generates N points on the GPU with torch: x, y uniform over a SIDE x SIDE square (millimetre
   integers, as a LAS file stores them), z uniform in 100..400 m; ~N / SIDE^2 points per 1 m cell.
2. Times the PyTorch pipeline on the device-resident points: cell ids with heightgrid's rule
   (col = floor((x - x0) / xres), row = floor((y0 - y) / yres), in float64), then
   scatter_reduce amin and amax (include_self=False) into a cell tensor and the range; also with a
   bincount for the count band, which heightgrid's GPU path always produces. CUDA events, one
   warm-up, median of --repeat runs.
3. Writes the same points as an uncompressed LAS 1.2 file (point format 0, scale 0.001, offset 0:
   heightgrid reads back x = X * 0.001 + 0, the very doubles torch used) and runs
   `heightgrid grid FILE --te 0 0 SIDE SIDE --res 1 --device gpu --mode M --repeat R -v` for each
   mode, taking its device-resident pipeline time (cell ids + CSR + reduce: what follows the upload;
   `atomic` has one fused pass, reported as reduce) from the phase medians it logs.
4. When GDAL's Python bindings are present, checks heightgrid's range band against torch's, bit for
   bit (both are float32(max - min) computed in float64).

Usage (on the GPU machine, heightgrid built; ~1 minute at the defaults, 2 GB of disk for the LAS):
  python3 scripts/torch_scatter_baseline.py --heightgrid build-gpu/app/heightgrid
  python3 scripts/torch_scatter_baseline.py --points 1e8 --side 3162 --modes hybrid,thread,atomic
"""

import argparse
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch


def cuda_median_ms(fn, repeat):
    """One warm-up call, then the median of `repeat` calls timed with CUDA events."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def write_las(path, X, Y, Z, scale):
    """LAS 1.2, point data record format 0 (20 bytes), no VLRs; X, Y, Z int32 numpy arrays."""
    n = len(X)
    header_size = 227
    header = bytearray()
    header += b"LASF"
    header += struct.pack("<HH", 0, 0)  # file source id, global encoding
    header += bytes(16)  # project GUID
    header += struct.pack("<BB", 1, 2)  # version 1.2
    header += b"torch_scatter_baseline".ljust(32, b"\0")  # system identifier
    header += b"heightgrid scripts".ljust(32, b"\0")  # generating software
    header += struct.pack("<HH", 1, 2025)  # creation day, year
    header += struct.pack("<HII", header_size, header_size, 0)  # header size, offset to points, VLRs
    header += struct.pack("<BHI", 0, 20, n)  # point format, record length, legacy point count
    header += struct.pack("<5I", n, 0, 0, 0, 0)  # points by return
    header += struct.pack("<3d", scale, scale, scale)
    header += struct.pack("<3d", 0.0, 0.0, 0.0)  # offsets
    header += struct.pack(
        "<6d",
        X.max() * scale, X.min() * scale, Y.max() * scale, Y.min() * scale, Z.max() * scale, Z.min() * scale,
    )
    assert len(header) == header_size, len(header)
    record = np.dtype([("x", "<i4"), ("y", "<i4"), ("z", "<i4"), ("intensity", "<u2"), ("returns", "u1"),
                       ("classification", "u1"), ("scan_angle", "i1"), ("user_data", "u1"), ("source", "<u2")])
    with open(path, "wb") as f:
        f.write(header)
        block = 1 << 24
        for s in range(0, n, block):
            e = min(n, s + block)
            r = np.zeros(e - s, dtype=record)
            r["x"], r["y"], r["z"] = X[s:e], Y[s:e], Z[s:e]
            r["returns"] = 1 | (1 << 3)  # return 1 of 1
            r.tofile(f)


PHASES = re.compile(r"GPU \((\w+) mode.*?cell ids ([\d.]+) ms, CSR ([\d.]+) ms, reduce ([\d.]+) ms")


def run_heightgrid(exe, las, tif, side, mode, repeat):
    cmd = [exe, "grid", las, "-o", tif, "--te", "0", "0", str(side), str(side), "--res", "1", "--metrics", "range",
           "--device", "gpu", "--mode", mode, "--repeat", str(repeat), "-v", "--overwrite", "--co", "COMPRESS=NONE"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    log = out.stdout + out.stderr
    if out.returncode != 0:
        sys.exit(f"heightgrid failed ({out.returncode}): {' '.join(cmd)}\n{log}")
    m = PHASES.search(log)
    if not m:
        sys.exit(f"no GPU phase line in heightgrid's log:\n{log}")
    cell_ids, csr, reduce_ms = (float(v) for v in m.groups()[1:])
    return cell_ids, csr, reduce_ms


def compare_with_gdal(tif, torch_range, side):
    try:
        from osgeo import gdal
    except ImportError:
        return "skipped (no GDAL Python bindings)"
    band = gdal.Open(tif).GetRasterBand(1).ReadAsArray().astype(np.float32).reshape(-1)
    want = torch_range.cpu().numpy()
    same = np.array_equal(band.view(np.uint32), want.view(np.uint32)) or np.array_equal(band, want, equal_nan=True)
    return "bit-identical" if same else f"DIFFERENT in {int(np.sum(~np.isclose(band, want, equal_nan=True)))} cells"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=float, default=1e8)
    ap.add_argument("--side", type=int, default=3162, help="grid side in 1 m cells (10^7 cells at 3162)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--heightgrid", default=shutil.which("heightgrid"), help="the heightgrid executable")
    ap.add_argument("--modes", default="hybrid,thread,atomic")
    ap.add_argument("--workdir", default=tempfile.gettempdir(), help="where the LAS and GeoTIFF go")
    ap.add_argument("--keep", action="store_true", help="keep the LAS file")
    a = ap.parse_args()

    n = int(a.points)
    side = a.side
    cells = side * side
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(a.seed)
    scale = 0.001
    # y >= 1 mm: y = 0 would sit on the grid's bottom edge, outside it (cells are half-open).
    X = torch.randint(0, side * 1000, (n,), generator=g, device=dev, dtype=torch.int32)
    Y = torch.randint(1, side * 1000, (n,), generator=g, device=dev, dtype=torch.int32)
    Z = torch.randint(100_000, 400_000, (n,), generator=g, device=dev, dtype=torch.int32)
    x = X.double() * scale + 0.0
    y = Y.double() * scale + 0.0
    z = Z.double() * scale + 0.0
    x0, y0, res = 0.0, float(side), 1.0
    inf = float("inf")

    def cell_ids():
        col = torch.floor((x - x0) / res).long()
        row = torch.floor((y0 - y) / res).long()
        return row * side + col

    def range_band():
        cid = cell_ids()
        lo = torch.full((cells,), inf, dtype=torch.float64, device=dev).scatter_reduce_(0, cid, z, "amin",
                                                                                         include_self=False)
        hi = torch.full((cells,), -inf, dtype=torch.float64, device=dev).scatter_reduce_(0, cid, z, "amax",
                                                                                          include_self=False)
        return (hi - lo).float(), lo

    def range_and_count():
        cid = cell_ids()
        lo = torch.full((cells,), inf, dtype=torch.float64, device=dev).scatter_reduce_(0, cid, z, "amin",
                                                                                         include_self=False)
        hi = torch.full((cells,), -inf, dtype=torch.float64, device=dev).scatter_reduce_(0, cid, z, "amax",
                                                                                          include_self=False)
        count = torch.bincount(cid, minlength=cells)
        return (hi - lo).float(), count

    name = torch.cuda.get_device_name(dev)
    print(f"# torch {torch.__version__} on {name}: {n:,} points, {cells:,} cells ({n / cells:.1f} per cell)\n")
    t_ids = cuda_median_ms(cell_ids, a.repeat)
    t_range = cuda_median_ms(range_band, a.repeat)
    t_count = cuda_median_ms(range_and_count, a.repeat)
    rows = [("torch: cell ids only", t_ids),
            ("torch: cell ids + scatter_reduce amin/amax -> range", t_range),
            ("torch: the same + bincount (count band)", t_count)]

    check = "not run"
    if a.heightgrid:
        las = os.path.join(a.workdir, "torch_scatter_baseline.las")
        tif = os.path.join(a.workdir, "torch_scatter_baseline.tif")
        write_las(las, X.cpu().numpy(), Y.cpu().numpy(), Z.cpu().numpy(), scale)
        r, lo = range_band()
        torch_range = torch.where(torch.isinf(lo), torch.full_like(r, float("nan")), r)  # empty cells: NaN nodata
        for mode in a.modes.split(","):
            cell_ids_ms, csr_ms, reduce_ms = run_heightgrid(a.heightgrid, las, tif, side, mode, a.repeat)
            rows.append((f"heightgrid {mode}: cell ids {cell_ids_ms:.2f} + CSR {csr_ms:.2f} + reduce {reduce_ms:.2f} ms "
                         "(range + count bands)", cell_ids_ms + csr_ms + reduce_ms))
            check = compare_with_gdal(tif, torch_range, side)
            print(f"heightgrid {mode}: range band vs torch: {check}")
        if not a.keep:
            os.remove(las)
    else:
        print("heightgrid not found (pass --heightgrid PATH): timing torch only")

    print("\n| pipeline (device-resident points, 1 m cells) | ms | G points/s |\n|---|---|---|")
    for label, ms in rows:
        print(f"| {label} | {ms:.2f} | {n / (ms * 1e-3) / 1e9:.1f} |")
    print("\nGoal (issue #7): heightgrid's device-resident pipeline >= 20 G points/s and >= 2x torch's "
          "scatter_reduce pipeline (amin/amax plus cell ids).")


if __name__ == "__main__":
    main()
