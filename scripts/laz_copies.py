#!/usr/bin/env python3
"""Copies one LAS/LAZ tile N times into a directory, for the many-tiles LAZ benchmarks.

  python3 scripts/laz_copies.py tile.laz out_dir/ --copies 9091 [--shift]

Each copy is the tile's bytes (real copies, not links: the page cache then holds every file, as
it would a delivery of distinct tiles). With --shift, copy k is moved by whole tile widths to
column k % C, row k // C of a square mosaic by rewriting the header's X/Y offsets and bounds (the
compressed points are untouched), so the copies cover distinct ground instead of one tile's.
Needs only the Python standard library (it runs on the GPU host).
"""

import argparse
import math
import os
import struct
import sys

# LAS header offsets (ASPRS LAS 1.0-1.4): scale x/y/z, offset x/y/z, then max x, min x, max y, min y.
OFFSET_X, OFFSET_Y = 155, 163
MAX_X, MIN_X, MAX_Y, MIN_Y = 179, 187, 195, 203


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tile")
    p.add_argument("out_dir")
    p.add_argument("--copies", type=int, required=True)
    p.add_argument("--shift", action="store_true")
    a = p.parse_args()
    with open(a.tile, "rb") as f:
        data = bytearray(f.read())
    if data[:4] != b"LASF":
        sys.exit(f"{a.tile}: not a LAS/LAZ file")
    ox, oy = struct.unpack_from("<dd", data, OFFSET_X)
    max_x, min_x, max_y, min_y = struct.unpack_from("<dddd", data, MAX_X)
    # Whole metres past the tile's extent, so neighbours never share a cell at --res 1, 2, 5, 10.
    width = math.ceil((max_x - min_x) / 10.0 + 1) * 10.0
    height = math.ceil((max_y - min_y) / 10.0 + 1) * 10.0
    columns = max(1, math.ceil(math.sqrt(a.copies)))
    os.makedirs(a.out_dir, exist_ok=True)
    for k in range(a.copies):
        if a.shift:
            dx, dy = (k % columns) * width, (k // columns) * height
            struct.pack_into("<dd", data, OFFSET_X, ox + dx, oy + dy)
            struct.pack_into("<dddd", data, MAX_X, max_x + dx, min_x + dx, max_y + dy, min_y + dy)
        with open(os.path.join(a.out_dir, f"tile_{k:05d}.laz"), "wb") as f:
            f.write(data)
    print(f"{a.copies} copies of {a.tile} ({len(data)} bytes) in {a.out_dir}"
          + (f", a mosaic of {columns} columns of {width:g} x {height:g}" if a.shift else ""))


if __name__ == "__main__":
    main()
