#!/usr/bin/env python3
"""Writes data/copc_octree_pdrf6.copc.laz: a seeded multi-level COPC 1.0 file (developer-side: lazrs
0.8 from PyPI for the LAZ chunks; the header, VLRs and hierarchy are written here by hand, after the
COPC 1.0 specification, since laspy writes no COPC).

20,000 points of LAS 1.4 point format 6 over a 100 m x 100 m square near (500000, 4100000): ground
(class 2, a smooth surface) and low vegetation (classes 3-5, up to 3 m above it), returns 1-3. The
octree: a cube of 128 m whose root node and every node below it keep at most 32 points (taken in a
seeded random order: the first to reach a voxel stay at its level), the rest going down to depth 5,
where nodes keep everything; one LAZ chunk a node (variable-size chunks), the hierarchy in one
page. The info VLR's spacing is the root's, 22.6 m: 0.71 m at depth 5, the points' own spacing
(2 points a square metre).
"""
import os
import struct

import lazrs
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(here, "copc_octree_pdrf6.copc.laz")

N = 20000
DEPTH = 5
CAPACITY = 32
SCALE = 0.01
OFFSET = (500000.0, 4100000.0, 0.0)
CENTER = (500064.0, 4100064.0, 64.0)
HALF = 64.0
SPACING = 22.6


def make_points(rng):
    x = rng.uniform(500000.0, 500100.0, N)
    y = rng.uniform(4100000.0, 4100100.0, N)
    ground = 22.0 + 1.0 * np.sin(x / 17.0) * np.cos(y / 23.0)
    veg = rng.random(N) < 0.6
    z = ground + np.where(veg, rng.uniform(0.0, 3.0, N), 0.0)
    cls = np.where(veg, rng.integers(3, 6, N), 2).astype(np.uint8)
    nret = rng.integers(1, 4, N).astype(np.uint8)
    ret = np.minimum(rng.integers(1, 4, N), nret).astype(np.uint8)
    return x, y, z, cls, ret, nret


def records(x, y, z, cls, ret, nret, idx):
    dt = np.dtype([("X", "<i4"), ("Y", "<i4"), ("Z", "<i4"), ("intensity", "<u2"), ("returns", "u1"),
                   ("flags", "u1"), ("classification", "u1"), ("user_data", "u1"), ("scan_angle", "<i2"),
                   ("point_source", "<u2"), ("gps_time", "<f8")])
    r = np.zeros(len(idx), dtype=dt)
    r["X"] = np.round((x[idx] - OFFSET[0]) / SCALE).astype(np.int32)
    r["Y"] = np.round((y[idx] - OFFSET[1]) / SCALE).astype(np.int32)
    r["Z"] = np.round((z[idx] - OFFSET[2]) / SCALE).astype(np.int32)
    r["intensity"] = (idx * 7) % 4000
    r["returns"] = ret[idx] | (nret[idx] << 4)
    r["classification"] = cls[idx]
    r["gps_time"] = 1000.0 + idx * 0.001
    return r.tobytes()


def octree(x, y, z, rng):
    """Node key -> point indices: the first CAPACITY points (in a seeded order) of each voxel stay."""
    nodes = {}
    order = rng.permutation(N)
    lo = np.array(CENTER) - HALF
    for i in order:
        p = np.array([x[i], y[i], z[i]])
        for level in range(DEPTH + 1):
            side = 2 * HALF / (1 << level)
            key = (level,) + tuple(int(v) for v in np.minimum((p - lo) // side, (1 << level) - 1))
            members = nodes.setdefault(key, [])
            if len(members) < CAPACITY or level == DEPTH:
                members.append(i)
                break
    return {k: np.array(v) for k, v in nodes.items()}


def main():
    rng = np.random.default_rng(20261128)
    x, y, z, cls, ret, nret = make_points(rng)
    nodes = octree(x, y, z, rng)
    keys = sorted(nodes)  # level first: parents before children
    vlr = lazrs.LazVlr.new_for_compression(6, 0, True)
    laz_data = vlr.record_data()
    header_size = 375
    copc_vlr_at = header_size
    laz_vlr_at = copc_vlr_at + 54 + 160
    point_data = laz_vlr_at + 54 + len(laz_data)

    import io
    body = io.BytesIO()
    body.write(b"\0" * point_data)  # the header and VLRs, written last
    compressor = lazrs.LasZipCompressor(body, vlr)
    compressor.reserve_offset_to_chunk_table()
    for k in keys:
        compressor.compress_many(records(x, y, z, cls, ret, nret, nodes[k]))
        compressor.finish_current_chunk()
    compressor.done()
    end_of_points = body.tell()
    # Each node's chunk: after the 8-byte table offset, chunk after chunk in key order.
    body.seek(point_data)
    table = lazrs.read_chunk_table(body, vlr)
    offsets, at = [], point_data + 8
    for (count, size) in table:
        if count > 0:  # lazrs ends with a chunk of no points (and no bytes for point14)
            offsets.append((at, size, count))
        at += size
    assert len(offsets) == len(keys)
    entries = b"".join(struct.pack("<iiiiQii", *k, o, size, count) for k, (o, size, count) in zip(keys, offsets))
    evlr_at = end_of_points
    body.seek(evlr_at)
    body.write(struct.pack("<H16sHQ32s", 0, b"copc", 1000, len(entries), b"EPT hierarchy"))
    hierarchy_at = body.tell()
    body.write(entries)
    data = bytearray(body.getvalue())

    allx = np.round((x - OFFSET[0]) / SCALE) * SCALE + OFFSET[0]
    ally = np.round((y - OFFSET[1]) / SCALE) * SCALE + OFFSET[1]
    allz = np.round((z - OFFSET[2]) / SCALE) * SCALE + OFFSET[2]
    by_return = [int(np.sum(ret == r)) for r in range(1, 16)]
    header = struct.pack(
        "<4sHH16sBB32s32sHHHIIBHI5I3d3d6dQQIQ15Q",
        b"LASF", 0, 16 | 1, b"\0" * 16, 1, 4, b"heightgrid data/make_copc.py", b"lazrs 0.8 + make_copc.py",
        332, 2026, header_size, point_data, 2, 6 | 0x80, 30, 0, 0, 0, 0, 0, 0,
        SCALE, SCALE, SCALE, *OFFSET,
        allx.max(), allx.min(), ally.max(), ally.min(), allz.max(), allz.min(),
        0, evlr_at, 1, N, *by_return)
    assert len(header) == header_size
    info = struct.pack("<5dQQ2d11Q", *CENTER, HALF, SPACING, hierarchy_at, len(entries),
                       1000.0, 1000.0 + (N - 1) * 0.001, *([0] * 11))
    copc_vlr = struct.pack("<H16sHH32s", 0, b"copc", 1, 160, b"copc info") + info
    laz_vlr = struct.pack("<H16sHH32s", 0, b"laszip encoded", 22204, len(laz_data), b"lazrs variable chunks") + laz_data
    data[0:point_data] = header + copc_vlr + laz_vlr
    with open(OUT, "wb") as f:
        f.write(data)
    levels = {}
    for k in keys:
        levels.setdefault(k[0], [0, 0])
        levels[k[0]][0] += 1
        levels[k[0]][1] += len(nodes[k])
    print(f"wrote {OUT}: {len(data)} bytes, {len(keys)} nodes; per level (nodes, points): {levels}")


if __name__ == "__main__":
    main()
