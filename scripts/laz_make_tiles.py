#!/usr/bin/env python3
"""Cuts an uncompressed LAS file into N LAZ tiles of consecutive records, for the many-tiles benchmark.

  python3 scripts/laz_make_tiles.py big.las tiles/ --tiles 1000 --points-per-tile 64600

Tile k holds records [k * P, (k + 1) * P) of the input (a throughput benchmark: the tiles need not be
spatial), with the input's header, scales, offsets and VLRs, compressed by lazrs (50000-point chunks),
on --jobs processes.
"""

import argparse
import multiprocessing
import os
import sys

import laspy


def write_tile(args):
    src, dst, first, count = args
    with laspy.open(src) as reader:
        reader.seek(first)
        points = reader.read_points(count)
        header = laspy.LasHeader(point_format=reader.header.point_format, version=reader.header.version)
        header.scales = reader.header.scales
        header.offsets = reader.header.offsets
        header.vlrs = list(reader.header.vlrs)
    with laspy.open(dst, mode="w", header=header, do_compress=True, laz_backend=laspy.LazBackend.Lazrs) as writer:
        writer.write_points(points)
    return len(points)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source")
    p.add_argument("out_dir")
    p.add_argument("--tiles", type=int, default=1000)
    p.add_argument("--points-per-tile", type=int, default=64600)
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    a = p.parse_args()
    with laspy.open(a.source) as r:
        total = r.header.point_count
    if a.tiles * a.points_per_tile > total:
        sys.exit(f"{a.source}: {total} points, fewer than {a.tiles} x {a.points_per_tile}")
    os.makedirs(a.out_dir, exist_ok=True)
    work = [(a.source, os.path.join(a.out_dir, f"tile_{k:05d}.laz"), k * a.points_per_tile, a.points_per_tile)
            for k in range(a.tiles)]
    with multiprocessing.Pool(a.jobs) as pool:
        n = sum(pool.map(write_tile, work, chunksize=8))
    print(f"{a.tiles} tiles, {n} points in {a.out_dir}")


if __name__ == "__main__":
    main()
