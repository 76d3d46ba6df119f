#!/usr/bin/env python3
"""Developer check of the layered LAZ chunk decoder (io/src/laz/laz_layered.cpp) against laspy.

Makes LAS 1.4 LAZ files (point formats 6-10) with laspy + lazrs in a scratch directory, each with
a "<file>.records" twin holding the raw point records they were compressed from, then runs
  io_tests --gtest_filter=LazLayeredDeveloperCheck.*
with HEIGHTGRID_LAZ_LAYERED_CHECK naming them: it decodes every chunk with every field and with
heightgrid's selection, compares the records byte for byte and prints single-thread speed.
Finally it times lazrs's own single-threaded decoder on the same files (all fields, and the
same selection as heightgrid: XY/returns/channel, Z, classification, flags).

Developer-side only (needs `pip install laspy lazrs`, optionally `laszip` for files written by
LASzip itself); the product has no LAZ encoder, so these
files cannot be made at test time. Usage:
  python3 scripts/laz_layered_check.py [--build build-lazB] [--out /tmp/laz_layered_check]
                                       [--big-points 1100000]
"""

import argparse
import io
import os
import subprocess
import sys
import time

import laspy
import lazrs
import numpy as np

REAL = os.environ.get("HEIGHTGRID_REAL_DATA_DIR",
                      os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "real"))


def write_laz(las, path, variable_chunks=None):
    """Writes `las` as LAZ with lazrs. variable_chunks=N: variable-size chunks of N points
    (laspy always writes fixed 50000-point chunks, so lazrs is driven directly here)."""
    if variable_chunks is None:
        las.write(path, laz_backend=laspy.LazBackend.Lazrs)
        return
    from laspy._compression import lazrsbackend

    original_new = lazrs.LazVlr.new_for_compression
    original_write = lazrsbackend.LazrsPointWriter.write_points

    def new_variable(point_format_id, num_extra_bytes, use_variable_size_chunks=False):
        return original_new(point_format_id, num_extra_bytes, True)

    def write_in_chunks(self, points):
        data = np.frombuffer(points.array, np.uint8)
        step = variable_chunks * points.point_size
        for start in range(0, len(data), step):
            self.compressor.compress_many(data[start:start + step])
            self.compressor.finish_current_chunk()

    lazrs.LazVlr.new_for_compression = staticmethod(new_variable)
    lazrsbackend.LazrsPointWriter.write_points = write_in_chunks
    try:
        las.write(path, laz_backend=laspy.LazBackend.Lazrs)
    finally:
        lazrs.LazVlr.new_for_compression = original_new
        lazrsbackend.LazrsPointWriter.write_points = original_write


def channel_runs(n, rng, mean_run=40):
    """Scanner channels 0-3 in runs, as interleaved scanners produce."""
    out = np.empty(n, np.uint8)
    i = 0
    channel = 0
    while i < n:
        run = int(rng.geometric(1.0 / mean_run))
        out[i:i + run] = channel
        i += run
        channel = (channel + 1 + int(rng.integers(0, 3))) % 4
    return out


def save(las, path, variable_chunks=None, backend=laspy.LazBackend.Lazrs):
    if backend == laspy.LazBackend.Lazrs:
        write_laz(las, path, variable_chunks)
    else:
        las.write(path, laz_backend=backend)
    records = las.points.array.tobytes()
    with open(path + ".records", "wb") as f:
        f.write(records)
    # The encoder must give back what it was given, or the reference is meaningless.
    back = laspy.read(path, laz_backend=backend)
    assert back.points.array.tobytes() == records, path + ": round trip differs"
    print("  %s: %d points, PDRF %d, items %s" % (os.path.basename(path), len(back.points),
          back.header.point_format.id, describe_items(laszip_record_data(path))))
    return path


def laszip_record_data(path):
    """The LASzip VLR's payload (laspy removes that VLR from the header it returns)."""
    with open(path, "rb") as f:
        data = f.read()
    header_size = int.from_bytes(data[94:96], "little")
    vlrs = int.from_bytes(data[100:104], "little")
    at = header_size
    for _ in range(vlrs):
        record_id = int.from_bytes(data[at + 18:at + 20], "little")
        length = int.from_bytes(data[at + 20:at + 22], "little")
        if data[at + 2:at + 16] == b"laszip encoded" and record_id == 22204:
            return data[at + 54:at + 54 + length]
        at += 54 + length
    raise ValueError(path + ": no LASzip VLR")


def describe_items(record_data):
    count = int.from_bytes(record_data[32:34], "little")
    names = {10: "point14", 11: "rgb14", 12: "rgbnir14", 13: "wavepacket14", 14: "byte14"}
    items = []
    for k in range(count):
        t, size, version = np.frombuffer(record_data[34 + 6 * k:40 + 6 * k], "<u2")
        items.append("%s(%d) v%d" % (names.get(int(t), str(t)), size, version))
    chunk = int.from_bytes(record_data[12:16], "little")
    return ", ".join(items) + (", variable chunks" if chunk == 0xFFFFFFFF else ", %d-point chunks" % chunk)


def make_files(out, big_points):
    rng = np.random.default_rng(8)
    autzen = laspy.read(os.path.join(REAL, "pdal", "las_autzen_trim_7.las"))
    n = len(autzen.points)
    files = []

    # 1. PDRF 7 (point14 + rgb14), 110000 points in three 50000-point chunks. The reference is
    #    the uncompressed LAS twin itself.
    path = os.path.join(out, "autzen7.laz")
    files.append(save(autzen, path))

    # 2. The same points on four scanner channels in runs (context switching in every item),
    #    variable-size chunks of 7777 points.
    las = laspy.LasData(autzen.header, autzen.points.copy())
    las.scanner_channel = channel_runs(n, rng)
    files.append(save(las, os.path.join(out, "channels7.laz"), variable_chunks=7777))

    # 3. PDRF 8 (rgbnir14) with 4 extra bytes (byte14), channels, user data and scan angles that
    #    vary, and a point source ID that never changes (empty layers next to full ones).
    header = laspy.LasHeader(point_format=8, version="1.4")
    header.scales = autzen.header.scales
    header.offsets = autzen.header.offsets
    header.add_extra_dim(laspy.ExtraBytesParams(name="amplitude", type=np.uint16))
    header.add_extra_dim(laspy.ExtraBytesParams(name="tag", type=np.uint8))
    header.add_extra_dim(laspy.ExtraBytesParams(name="flat", type=np.uint8))
    las = laspy.LasData(header)
    las.X, las.Y, las.Z = autzen.X, autzen.Y, autzen.Z
    for name in ("intensity", "return_number", "number_of_returns", "classification",
                 "gps_time", "red", "green", "blue", "scan_direction_flag",
                 "edge_of_flight_line", "synthetic", "key_point", "withheld"):
        las[name] = autzen[name]
    las.nir = (autzen.red.astype(np.uint32) * 3 + autzen.green) % 65536
    las.user_data = (np.arange(n) // 97 % 256).astype(np.uint8)
    las.scan_angle = (np.sin(np.arange(n) / 500.0) * 15000).astype(np.int16)
    las.point_source_id = np.full(n, 7, np.uint16)
    las.scanner_channel = channel_runs(n, rng, mean_run=300)
    las.overlap = (np.arange(n) // 1000 % 2).astype(bool)
    las.amplitude = (autzen.intensity.astype(np.uint32) * 7 % 65536).astype(np.uint16)
    las.tag = (np.arange(n) % 5).astype(np.uint8)
    las.flat = np.full(n, 42, np.uint8)
    files.append(save(las, os.path.join(out, "nir8_extra.laz")))

    # 4. PDRF 9 (wavepacket14) with synthetic wave packets, 20000 points, one scanner channel:
    #    lazrs 0.8.2 does not give back the wave packets it was given once points switch
    #    channels (its wavepacket14 encoder and decoder disagree), so it is no reference there;
    #    4b checks several channels with LASzip.
    m = 20000
    header = laspy.LasHeader(point_format=9, version="1.4")
    header.scales = autzen.header.scales
    header.offsets = autzen.header.offsets
    las = laspy.LasData(header)
    las.X, las.Y, las.Z = autzen.X[:m], autzen.Y[:m], autzen.Z[:m]
    las.gps_time = autzen.gps_time[:m]
    las.return_number = autzen.return_number[:m]
    las.number_of_returns = autzen.number_of_returns[:m]
    sizes = rng.integers(100, 400, m).astype(np.uint32)
    offsets = np.cumsum(sizes.astype(np.uint64)) + np.uint64(1 << 33)
    jump = rng.random(m) < 0.02
    offsets[jump] += rng.integers(1, 1 << 40, int(jump.sum())).astype(np.uint64)
    las.wavepacket_index = (np.arange(m) // 5000 + 1).astype(np.uint8)
    las.wavepacket_offset = offsets
    las.wavepacket_size = sizes
    las.return_point_wave_location = rng.random(m).astype(np.float32) * 1000
    las.x_t = rng.normal(0, 1e-4, m).astype(np.float32)
    las.y_t = rng.normal(0, 1e-4, m).astype(np.float32)
    las.z_t = rng.normal(-1, 1e-4, m).astype(np.float32)
    files.append(save(las, os.path.join(out, "wave9.laz")))

    # 4b. The same wave packets on four scanner channels, and files 2 and 3 again, written by
    #     LASzip itself (pip install laszip) when laspy can use it: the reference encoder.
    if laspy.LazBackend.Laszip.is_available():
        laszip = laspy.LazBackend.Laszip
        las.scanner_channel = channel_runs(m, rng, mean_run=25)
        files.append(save(las, os.path.join(out, "wave9_channels_laszip.laz"), backend=laszip))
        for name in ("channels7", "nir8_extra"):
            again = laspy.read(os.path.join(out, name + ".laz"))
            files.append(save(again, os.path.join(out, name + "_laszip.laz"), backend=laszip))
    else:
        print("  (laszip not installed: no LASzip-written files)")

    # 5. PDRF 6, >= 1e6 points (autzen tiled), for speed.
    tiles = (big_points + n - 1) // n
    header = laspy.LasHeader(point_format=6, version="1.4")
    header.scales = autzen.header.scales
    header.offsets = autzen.header.offsets
    las = laspy.LasData(header)
    span = int(autzen.X.max() - autzen.X.min()) + 1000
    las.X = np.concatenate([autzen.X + t * span for t in range(tiles)])
    las.Y = np.tile(autzen.Y, tiles)
    las.Z = np.tile(autzen.Z, tiles)
    las.gps_time = np.concatenate([autzen.gps_time + t * 3600.0 for t in range(tiles)])
    for name in ("intensity", "return_number", "number_of_returns", "classification",
                 "user_data", "scan_angle", "point_source_id", "scan_direction_flag",
                 "edge_of_flight_line"):
        las[name] = np.tile(np.asarray(autzen[name]), tiles)
    files.append(save(las, os.path.join(out, "big6.laz")))
    return files


def time_lazrs(path, selection):
    with open(path, "rb") as f:
        data = f.read()
    las = laspy.read(path, laz_backend=laspy.LazBackend.Lazrs)
    record_data = laszip_record_data(path)
    offset = las.header.offset_to_point_data
    n = las.header.point_count
    size = las.header.point_format.size
    best = 1e30
    for _ in range(3):
        source = io.BytesIO(data)
        source.seek(offset)
        out = bytearray(n * size)
        t0 = time.perf_counter()
        d = lazrs.LasZipDecompressor(source, record_data, selection.to_lazrs())
        d.decompress_many(out)
        best = min(best, time.perf_counter() - t0)
    return n, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build-lazB"))
    ap.add_argument("--out", default="/tmp/laz_layered_check")
    ap.add_argument("--big-points", type=int, default=1_100_000)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    print("making LAZ files with laspy %s + lazrs in %s" % (laspy.__version__, args.out))
    files = make_files(args.out, args.big_points)

    tests = os.path.join(args.build, "tests", "io", "io_tests")
    env = dict(os.environ, HEIGHTGRID_LAZ_LAYERED_CHECK=":".join(files))
    print("\nheightgrid (%s):" % tests)
    rc = subprocess.call([tests, "--gtest_filter=LazLayeredDeveloperCheck.*"], env=env)

    S = laspy.DecompressionSelection
    heightgrid = S.XY_RETURNS_CHANNEL | S.Z | S.CLASSIFICATION | S.FLAGS
    print("\nlazrs %s, one thread (LasZipDecompressor, best of 3):" % getattr(lazrs, "__version__", ""))
    for path in files:
        n, t_all = time_lazrs(path, S.all())
        _, t_hg = time_lazrs(path, heightgrid)
        print("%s: all fields %.3f s (%.2f Mpoints/s), XY+Z+class+flags %.3f s (%.2f Mpoints/s)"
              % (path, t_all, n / t_all / 1e6, t_hg, n / t_hg / 1e6))
    return rc


if __name__ == "__main__":
    sys.exit(main())
