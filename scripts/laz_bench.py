#!/usr/bin/env python3
"""LAZ decoding speed of laspy + lazrs, the baseline for heightgrid's native decoder.

Decodes every point of FILE with laspy's lazrs backend, single-threaded (LazBackend.Lazrs) or
chunks in parallel (LazBackend.LazrsParallel, on RAYON_NUM_THREADS threads), streaming through
laspy's chunk_iterator and discarding the points, so memory stays bounded. One untimed warm-up
pass, then --repeat timed passes; prints each pass and a last line

  result: file=... backend=lazrs-parallel threads=16 points=... median_s=... points_per_s=...

(points/s of the median pass), which scripts/laz_bench.sh reads. lazrs delivers raw point
records; heightgrid's reader also converts them to double x/y/z and attribute columns, so the
comparison is slightly in lazrs's favour.

  pip install laspy lazrs
  python3 scripts/laz_bench.py big.laz --backend lazrs --repeat 3
  python3 scripts/laz_bench.py big.laz --backend lazrs-parallel --threads 16 --repeat 3
"""

import argparse
import os
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--backend", choices=["lazrs", "lazrs-parallel"], default="lazrs")
    parser.add_argument("--threads", type=int, default=0,
                        help="lazrs-parallel: RAYON_NUM_THREADS (default: rayon's choice, one per core)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes after one warm-up")
    parser.add_argument("--fields", choices=["all", "heightgrid"], default="all",
                        help="heightgrid: decode only XY, returns, Z, classification and flags "
                             "(lazrs skips the other layers of PDRF 6-10 chunks, as heightgrid does)")
    parser.add_argument("--chunk-points", type=int, default=5_000_000,
                        help="points per laspy read (100 LAZ chunks of 50000 by default)")
    args = parser.parse_args()
    if args.threads > 0:
        # Read by rayon when its global pool starts, i.e. at the first parallel decode.
        os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    from importlib.metadata import version

    import laspy

    backend = laspy.LazBackend.Lazrs if args.backend == "lazrs" else laspy.LazBackend.LazrsParallel
    threads = 1 if args.backend == "lazrs" else int(os.environ.get("RAYON_NUM_THREADS", os.cpu_count() or 1))
    selection = laspy.DecompressionSelection.all()
    if args.fields == "heightgrid":
        selection = (laspy.DecompressionSelection.XY_RETURNS_CHANNEL | laspy.DecompressionSelection.Z
                     | laspy.DecompressionSelection.CLASSIFICATION | laspy.DecompressionSelection.FLAGS)
    times = []
    points = 0
    for run in range(args.repeat + 1):
        t0 = time.perf_counter()
        points = 0
        with laspy.open(args.file, laz_backend=backend, decompression_selection=selection) as reader:
            for chunk in reader.chunk_iterator(args.chunk_points):
                points += len(chunk)
        seconds = time.perf_counter() - t0
        label = "warm-up" if run == 0 else f"pass {run}"
        print(f"{label}: {args.backend} threads={threads}: {points} points in {seconds:.3f} s: "
              f"{points / seconds / 1e6:.1f} Mpoints/s", flush=True)
        if run > 0:
            times.append(seconds)
    median = statistics.median(times)
    print(f"result: file={args.file} backend={args.backend} lazrs={version('lazrs')} "
          f"fields={args.fields} threads={threads} "
          f"points={points} repeat={args.repeat} median_s={median:.4f} min_s={min(times):.4f} "
          f"points_per_s={points / median:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
