#!/usr/bin/env python3
"""Compresses an uncompressed LAS file into LAZ with laspy + lazrs, for the LAZ benchmarks.

Streams the points (--chunk-points at a time, a multiple of the 50000-point LAZ chunk) so that
memory stays bounded whatever the file size, and compresses each block of chunks in parallel
(LazBackend.LazrsParallel, on RAYON_NUM_THREADS threads). The point format is kept: PDRF 0-5
give pointwise LASzip chunks (compressor 2, items v2), PDRF 6-10 layered ones (compressor 3,
items v3), unless --point-format converts the points (--point-format 1 writes a LAS 1.2 PDRF 1
file from a PDRF 6 one: the fields both formats have are copied; PDRF 6's overlap flag, which
PDRF 1 lacks, is dropped). Then checks the LAZ header's point count against the input.

  build/heightgrid synth lidar --points 100000000 --las-version 1.4 -o /tmp/laz_big/pdrf6.las
  python3 scripts/laz_make_big.py /tmp/laz_big/pdrf6.las /tmp/laz_big/pdrf6.laz
  python3 scripts/laz_make_big.py /tmp/laz_big/pdrf6.las /tmp/laz_big/pdrf1.laz --point-format 1
"""

import argparse
import sys
import time

import laspy
import numpy as np


def converted_header(source: laspy.LasHeader, point_format: int) -> laspy.LasHeader:
    header = laspy.LasHeader(point_format=point_format, version="1.2" if point_format < 6 else "1.4")
    header.scales = source.scales
    header.offsets = source.offsets
    header.vlrs = list(source.vlrs)
    return header


def converted_points(points, header: laspy.LasHeader):
    """The same points in header's format: every field the two formats share, copied."""
    out = laspy.ScaleAwarePointRecord.zeros(len(points), header=header)
    source_fields = set(points.point_format.dimension_names)
    for name in out.point_format.dimension_names:
        if name in source_fields and name not in ("X", "Y", "Z"):
            out[name] = points[name]
    if "scan_angle" in source_fields and "scan_angle_rank" in out.point_format.dimension_names:
        # PDRF 6+: int16 in units of 0.006 degrees; PDRF 0-5: int8 degrees.
        out["scan_angle_rank"] = np.clip(np.rint(np.asarray(points["scan_angle"]) * 0.006), -90, 90)
    out.X = points.X
    out.Y = points.Y
    out.Z = points.Z
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", help="uncompressed LAS")
    parser.add_argument("output", help="LAZ to write (replaced)")
    parser.add_argument("--chunk-points", type=int, default=5_000_000,
                        help="points read and compressed at a time (a multiple of 50000)")
    parser.add_argument("--point-format", type=int, choices=[0, 1, 2, 3, 6, 7, 8],
                        help="convert the points to this format (LAS 1.2 for 0-3, 1.4 for 6-8)")
    args = parser.parse_args()
    if args.chunk_points <= 0 or args.chunk_points % 50000 != 0:
        parser.error("--chunk-points must be a positive multiple of 50000 (the LAZ chunk size)")

    t0 = time.perf_counter()
    written = 0
    with laspy.open(args.input) as reader:
        if reader.header.are_points_compressed:
            parser.error(f"{args.input} is already compressed")
        total = reader.header.point_count
        header = reader.header
        convert = args.point_format is not None and args.point_format != header.point_format.id
        if convert:
            header = converted_header(reader.header, args.point_format)
        with laspy.open(args.output, mode="w", header=header, do_compress=True,
                        laz_backend=laspy.LazBackend.LazrsParallel) as writer:
            for points in reader.chunk_iterator(args.chunk_points):
                if convert:
                    points = converted_points(points, header)
                writer.write_points(points)
                written += len(points)
                print(f"\r{written}/{total} points", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    seconds = time.perf_counter() - t0

    with laspy.open(args.output) as check:
        if check.header.point_count != total or not check.header.are_points_compressed:
            print(f"laz_make_big.py: {args.output}: header says {check.header.point_count} points, "
                  f"expected {total}", file=sys.stderr)
            return 1
        fmt = check.header.point_format.id
    print(f"{args.output}: {total} points, PDRF {fmt}, written in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
