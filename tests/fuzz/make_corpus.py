#!/usr/bin/env python3
"""Writes the committed seed corpus of the whole-input fuzzers (tests/fuzz/corpus/<target>/).

Run by hand when the formats or options change; the fuzzers add what they learn to a copy in the
build tree, never here. Needs laspy with the lazrs backend (pip install 'laspy[lazrs]').

  tests/fuzz/make_corpus.py [tests/fuzz/corpus]

Every file is small (a few KB): the fuzzers mutate bytes, so a small valid file of each kind
teaches them more per second than a large one.
"""

import io
import struct
import sys
from pathlib import Path

import laspy
import laspy._compression.lazrsbackend as lazrs_backend
import lazrs
import numpy as np

WKT_UTM15 = (
    'PROJCS["WGS 84 / UTM zone 15N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],'
    'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],'
    'PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",-93],PARAMETER["scale_factor",0.9996],'
    'PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1],AUTHORITY["EPSG","32615"]]'
)


def points(header, n, seed):
    rng = np.random.default_rng(seed)
    las = laspy.LasData(header)
    las.x = 500000.0 + rng.uniform(0, 20, n)
    las.y = 4100000.0 + rng.uniform(0, 20, n)
    las.z = 100.0 + rng.uniform(-5, 30, n)
    las.classification = rng.choice([1, 2, 5, 6, 7, 18], n)
    las.return_number = rng.integers(1, 3, n)
    las.number_of_returns = np.maximum(las.return_number, rng.integers(1, 3, n))
    las.intensity = rng.integers(0, 65535, n)
    return las


def make_header(point_format, version, extra_bytes, crs):
    header = laspy.LasHeader(point_format=point_format, version=version)
    header.scales = np.array([0.01, 0.01, 0.01])
    header.offsets = np.array([500000.0, 4100000.0, 0.0])
    if extra_bytes:
        header.add_extra_dim(laspy.ExtraBytesParams(name="height", type=np.float32))
    if crs == "wkt" and header.version.minor >= 4:
        header.global_encoding.wkt = True
        header.vlrs.append(laspy.vlrs.known.WktCoordinateSystemVlr(WKT_UTM15))
    elif crs == "geokeys":
        keys = laspy.vlrs.known.GeoKeyDirectoryVlr()
        keys.parse_record_data(struct.pack("<16H", 1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32615))
        header.vlrs.append(keys)
    return header


class chunked_writer(lazrs_backend.LazrsPointWriter):
    """laspy's lazrs writer with variable-size chunks: each write_points call ends a chunk."""

    def __init__(self, dest, point_format, parallel):
        super().__init__(dest, point_format, False)
        self.vlr = lazrs.LazVlr.new_for_compression(point_format.id, point_format.num_extra_bytes, True)

    def write_points(self, points):
        super().write_points(points)
        self.compressor.finish_current_chunk()


def write(las, compress, chunk_points=None):
    out = io.BytesIO()
    if chunk_points is None:
        las.write(out, do_compress=compress, laz_backend=laspy.LazBackend.Lazrs if compress else None)
        return out.getvalue()
    original = lazrs_backend.LazrsPointWriter
    lazrs_backend.LazrsPointWriter = chunked_writer
    try:
        with laspy.open(out, mode="w", header=las.header, do_compress=True, closefd=False,
                        laz_backend=laspy.LazBackend.Lazrs) as writer:
            for start in range(0, len(las.points), chunk_points):
                writer.write_points(las.points[start:start + chunk_points])
    finally:
        lazrs_backend.LazrsPointWriter = original
    return out.getvalue()


def las_files(compress):
    """(name, bytes) of every point format, version, CRS and extra-bytes combination worth a seed."""
    specs = [(0, "1.2", False, None), (1, "1.2", True, "geokeys"), (2, "1.2", False, None),
             (3, "1.3", True, None), (6, "1.4", False, "wkt"), (7, "1.4", True, None),
             (8, "1.4", False, "wkt"), (10, "1.4", False, None)]
    for pf, version, extra, crs in specs:
        las = points(make_header(pf, version, extra, crs), 23, pf)
        if extra:
            las.height = np.asarray(las.z, dtype=np.float32)
        suffix = "laz" if compress else "las"
        name = f"pf{pf}_v{version.replace('.', '')}{'_eb' if extra else ''}{'_' + crs if crs else ''}"
        yield f"{name}.{suffix}", write(las, compress)
        if compress and pf in (1, 3, 6, 8):
            yield f"{name}_chunks7.{suffix}", write(las, compress, chunk_points=7)


def mutations(data, compressed):
    """A few broken copies of a valid file: truncated, lying counts, a zero scale."""
    yield "truncated_half", data[: len(data) // 2]
    yield "truncated_header", data[:200]
    lying = bytearray(data)
    struct.pack_into("<I", lying, 107, 0xFFFFFF)  # legacy point count
    yield "count_lie", bytes(lying)
    zero_scale = bytearray(data)
    struct.pack_into("<d", zero_scale, 131, 0.0)  # x scale
    yield "zero_scale", bytes(zero_scale)
    if compressed:
        table = bytearray(data)
        table[-8:] = b"\xff" * 8  # the chunk table's last entry
        yield "chunk_table_garbage", bytes(table)


XYZ = {
    "spaces.xyz": "1 2 3\n4.5 5.5 6.5\n-1e3 2E-2 +7\n",
    "header_csv.csv": "x,y,z,intensity\n1.0,2.0,3.0,10\n1.5,2.5,3.5,20\n",
    "semicolon.csv": "x;y;z\n1;2;3\n4;5;6\n",
    "tabs_comments.txt": "# a comment\n\n1\t2\t3\n\t4\t5\t6\n# end\n",
    "crlf_bom.xyz": "\ufeffX Y Z\r\n10 20 30\r\n11 21 31\r\n",
    "nan_inf.xyz": "1 2 nan\ninf 2 3\n-inf -inf 0\n1 2 3\n",
    "bad_line.xyz": "1 2 3\n4 5 abc\n",
    "short_line.xyz": "1 2 3\n4 5\n",
    "no_newline.xyz": "1 2 3\n4 5 6",
    "long_line.xyz": "1 2 3 " + " ".join(str(i) for i in range(300)) + "\n7 8 9\n",
    "empty.xyz": "",
    "many.xyz": "".join(f"{i * 0.25} {i * 0.5} {i % 7}\n" for i in range(200)),
}

OPTIONS = [
    ["grid", "in.xyz", "-o", "out.tif", "--res", "1"],
    ["grid", "in.las", "-o", "out.tif", "--tr", "2", "0.5", "--te", "0", "0", "10", "10", "--metrics", "range,min,max,count"],
    ["grid", "--synth", "uniform", "--points", "1000", "--synth-extent", "0", "0", "100", "100", "-o", "s.tif", "--res", "1"],
    ["grid", "--synth", "skewed", "--density", "4", "--cell-size", "2", "-o", "s.tif", "--res", "2", "--device", "cpu"],
    ["grid", "a.laz", "-o", "o.tif", "--res", "0.5", "--classes", "2,3,4", "--returns", "first", "--z-min", "-5", "--z-max", "50"],
    ["grid", "a.las", "-o", "o.tif", "--res", "1", "--nodata", "-9999", "--of", "COG", "--co", "COMPRESS=DEFLATE", "--overwrite"],
    ["grid", "a.las", "-o", "o.tif", "--res", "1", "--memory", "512M", "--threads", "2", "--mode", "thread", "--metrics", "mean,stddev"],
    ["-v", "grid", "a.xyz", "-o", "o.tif", "--res", "1", "--drop-classes", "7", "--keep-all", "-q"],
    ["info", "a.las", "--res", "2", "--threads", "1"],
    ["info", "--synth", "lidar", "--points", "5000", "--seed", "7"],
    ["compare", "a.las", "--res", "1", "--modes", "cpu", "--repeat", "2", "--json", "c.json"],
    ["compare", "--synth", "skewed", "--zipf-s", "1.1", "--hotspots", "3", "--res", "1", "--metrics", "count"],
    ["synth", "uniform", "-o", "s.las", "--points", "100", "--extent", "0", "0", "10", "10", "--las-version", "1.2"],
    ["synth", "lidar", "-o", "s.las", "--density", "2", "--extent", "0", "0", "50", "50", "--seed", "3"],
    ["grid", "--help"],
    ["--version"],
    ["grid", "a.las", "-o", "o.tif", "--res", "1e-300"],
    ["grid", "a.las", "-o", "o.tif", "--res", "1", "--te", "0", "0", "1e308", "1"],
]


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "corpus")
    for target in ("las_file_fuzz", "laz_file_fuzz", "xyz_fuzz", "options_fuzz"):
        (root / target).mkdir(parents=True, exist_ok=True)
    for compress, target in ((False, "las_file_fuzz"), (True, "laz_file_fuzz")):
        files = list(las_files(compress))
        for name, data in files:
            (root / target / name).write_bytes(data)
        # Mutations of two files of different versions (the fuzzer finds the rest).
        for name, data in (files[1], files[-2]):
            stem = name.rsplit(".", 1)[0]
            for what, broken in mutations(data, compress):
                (root / target / f"{stem}_{what}.{name.rsplit('.', 1)[1]}").write_bytes(broken)
    for name, text in XYZ.items():
        (root / "xyz_fuzz" / name).write_bytes(text.encode("utf-8"))
    for i, args in enumerate(OPTIONS):
        (root / "options_fuzz" / f"{i:02d}_{args[0].lstrip('-')}.args").write_text("\n".join(args))


if __name__ == "__main__":
    main()
