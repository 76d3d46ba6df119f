"""`import heightgrid` against the CLI's GeoTIFFs (issue 23): the same grid, bands and georeferencing.

Run by ctest with PYTHONPATH=<build>/python, HEIGHTGRID_EXE and HEIGHTGRID_DATA_DIR set. The GeoTIFFs
are read with GDAL's Python bindings (python3-gdal) when present, else compared through the CLI's
own --json (geotransform, size, counts).
"""

import json
import math
import os
import subprocess
import tempfile
import unittest

import numpy as np

import heightgrid

try:
    from osgeo import gdal

    gdal.UseExceptions()
except ImportError:  # python3-gdal is optional
    gdal = None

EXE = os.environ["HEIGHTGRID_EXE"]
DATA = os.environ["HEIGHTGRID_DATA_DIR"]
SAMPLE = os.path.join(DATA, "sample.xyz")
METRICS = ["range", "min", "max", "count"]


def cli_grid(out_dir, name, *args):
    """Runs `heightgrid grid ... --json` and returns (path, document)."""
    path = os.path.join(out_dir, name)
    run = subprocess.run([EXE, "grid", *args, "-o", path, "--json", "--device", "cpu"],
                         capture_output=True, text=True, check=True)
    return path, json.loads(run.stdout)


def same_band(test, got, want):
    test.assertEqual(got.shape, want.shape)
    for g, w in zip(got.ravel(), want.ravel()):
        if math.isnan(w):
            test.assertTrue(math.isnan(g))
        else:
            test.assertEqual(g, w)


class GridMatchesTheCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        pts = np.loadtxt(SAMPLE, comments="#", skiprows=2)  # a comment, then the "x y z" header
        self.x, self.y, self.z = pts[:, 0].copy(), pts[:, 1].copy(), pts[:, 2].copy()

    def check_against_cli(self, result, *cli_args):
        tif, doc = cli_grid(self.tmp.name, "cli.tif", *cli_args)
        out = doc["outputs"][0]
        self.assertEqual(list(result["geotransform"]), out["geotransform"])
        self.assertEqual([result["width"], result["height"]], out["size"])
        self.assertEqual(result["non_empty"], doc["cells"]["non_empty"])
        self.assertEqual(int(result["bands"]["count"].sum()), doc["points"]["binned"])
        if gdal is None:
            return
        ds = gdal.Open(tif)
        self.assertEqual(tuple(result["geotransform"]), ds.GetGeoTransform())
        for i, name in enumerate(METRICS):
            band = ds.GetRasterBand(i + 1)
            self.assertEqual(band.GetDescription(), name)
            want = band.ReadAsArray().astype(np.float64)
            if name == "count":  # uint32 in Python, 0 in an empty cell; a float band's nodata in the file
                want[np.isnan(want) | (want == band.GetNoDataValue())] = 0
            same_band(self, result["bands"][name].astype(np.float64), want)

    def test_arrays(self):
        r = heightgrid.grid(self.x, self.y, self.z, res=1, metrics=METRICS, device="cpu", crs="EPSG:32633")
        self.assertEqual(r["bands"]["range"].dtype, np.float32)
        self.assertEqual(r["bands"]["count"].dtype, np.uint32)
        self.assertEqual(r["bands"]["range"].shape, (2, 3))
        self.assertIn("32633", r["crs_wkt"])
        self.assertTrue(math.isnan(r["nodata"]))
        self.check_against_cli(r, SAMPLE, "--res", "1", "--metrics", ",".join(METRICS), "--a_srs", "EPSG:32633")

    def test_files(self):
        r = heightgrid.grid_files([SAMPLE], res=1, metrics=METRICS, device="cpu")
        self.check_against_cli(r, SAMPLE, "--res", "1", "--metrics", ",".join(METRICS))

    def test_other_dtypes_extent_and_edge_rule(self):
        # float32 input is converted once; an explicit extent, nodata and PDAL's edge rule as in the CLI
        r = heightgrid.grid(self.x.astype(np.float32), self.y.astype(np.float32), self.z.astype(np.float32),
                            tr=(1, 1), te=(500000, 4100000, 500003, 4100002), metrics=["count"], device="cpu",
                            edge_rule="pdal")
        self.assertEqual(r["bands"]["count"].shape, (2, 3))
        r2 = heightgrid.grid(self.x, self.y, self.z, res=1, metrics=METRICS, nodata=-9999, device="cpu",
                             te=[500000, 4100000, 500003, 4100002], edge_rule="pdal")
        self.check_against_cli(r2, SAMPLE, "--res", "1", "--metrics", ",".join(METRICS), "--nodata", "-9999",
                               "--te", "500000", "4100000", "500003", "4100002", "--edge-rule", "pdal")

    def test_shape_metrics_and_ground(self):
        # The CLI's shape metrics and cover height; ground= subtracts a DTM (the CLI's range of the
        # sample at 3 x 2 cells, written by the CLI as the "terrain": the heights are then z - its cell).
        shapes = ["skewness", "kurtosis", "cover", "above:1.5", "zbin:0,1,2", "entropy", "density", "count"]
        r = heightgrid.grid(self.x, self.y, self.z, res=1, metrics=shapes, device="cpu", cover_above=0.5)
        tif, _ = cli_grid(self.tmp.name, "shapes.tif", SAMPLE, "--res", "1", "--metrics", ",".join(shapes),
                          "--cover-above", "0.5")
        self.assertEqual(r["bands"]["zbin:0..1"].shape, (2, 3))
        self.assertEqual(r["bands"]["density"].dtype, np.float32)
        if gdal is not None:
            ds = gdal.Open(tif)
            names = [ds.GetRasterBand(i + 1).GetDescription() for i in range(ds.RasterCount)]
            self.assertEqual(names[4:6], ["zbin:0..1", "zbin:1..2"])
            for i, name in enumerate(names[:-1]):  # the float bands
                same_band(self, r["bands"][name].astype(np.float64),
                          ds.GetRasterBand(i + 1).ReadAsArray().astype(np.float64))
        dtm, _ = cli_grid(self.tmp.name, "dtm.tif", SAMPLE, "--res", "1", "--metrics", "min")
        g = heightgrid.grid_files([SAMPLE], res=1, metrics=["min", "count"], device="cpu", ground=dtm)
        self.assertEqual(int(g["bands"]["count"].sum()), g["binned"])
        with self.assertRaises(OSError):
            heightgrid.grid_files([SAMPLE], res=1, ground=os.path.join(self.tmp.name, "nowhere.tif"))
        with self.assertRaises(ValueError):
            heightgrid.grid(self.x, self.y, self.z, res=1, metrics=["cover"], cover_above=float("nan"))

    def test_tagged_counts(self):
        # count:CLASSES, first and last: float32 bands, nodata where a cell is empty, as in the CLI's
        # GeoTIFF of the same bands; x y z arrays have no classes (an input error).
        las = os.path.abspath(os.path.join(DATA, "layered_dims_pdrf8.las"))
        tagged = ["count", "count:1,2", "first", "last"]
        r = heightgrid.grid_files([las], res=1, metrics=tagged, device="cpu")
        band = r["bands"]["count:1,2"]
        self.assertEqual(band.dtype, np.float32)
        count = r["bands"]["count"].astype(np.float64)
        for name in tagged[1:]:
            got = r["bands"][name].astype(np.float64)
            self.assertTrue(np.array_equal(np.isnan(got), count == 0), name)
            self.assertTrue(np.all(got[count > 0] <= count[count > 0]), name)
        tif, doc = cli_grid(self.tmp.name, "tagged.tif", las, "--res", "1", "--metrics", ",".join(tagged),
                            "--ot", "Float32")
        if gdal is not None:
            ds = gdal.Open(tif)
            for i, name in enumerate(tagged[1:]):
                same_band(self, r["bands"][name].astype(np.float64),
                          ds.GetRasterBand(i + 2).ReadAsArray().astype(np.float64))
        with self.assertRaises(ValueError):
            heightgrid.grid(self.x, self.y, self.z, res=1, metrics=["count:2"], device="cpu")

    def test_urls_and_catalogues(self):
        # grid_files reads what the CLI reads: a COPC file over HTTP (tests/app/range_server.py on
        # 127.0.0.1) and a list of files, the same bands as the local file.
        copc = os.path.abspath(os.path.join(DATA, "copc_octree_pdrf6.copc.laz"))
        server = subprocess.Popen(
            ["python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app", "range_server.py"), DATA],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            port = int(server.stdout.readline().split()[1])
            local = heightgrid.grid_files([copc], res=1, metrics=METRICS, device="cpu")
            remote = heightgrid.grid_files([f"http://127.0.0.1:{port}/copc_octree_pdrf6.copc.laz"], res=1,
                                           metrics=METRICS, device="cpu")
            listed = os.path.join(self.tmp.name, "tiles.lst")
            with open(listed, "w") as f:
                f.write(copc + "\n")
            catalogue = heightgrid.grid_files([listed], res=1, metrics=METRICS, device="cpu")
            for other in (remote, catalogue):
                self.assertEqual(other["geotransform"], local["geotransform"])
                for name in METRICS:
                    same_band(self, other["bands"][name].astype(np.float64), local["bands"][name].astype(np.float64))
        finally:
            server.stdin.close()
            server.wait(timeout=10)

    def test_errors(self):
        with self.assertRaises(ValueError):
            heightgrid.grid(self.x, self.y[:3], self.z, res=1)
        with self.assertRaises(ValueError):
            heightgrid.grid(self.x, self.y, self.z, res=1, metrics=["bogus"])
        with self.assertRaises(ValueError):
            heightgrid.grid(self.x, self.y, self.z)  # no cell size
        with self.assertRaises(OSError):
            heightgrid.grid_files([os.path.join(self.tmp.name, "none.las")], res=1)


if __name__ == "__main__":
    unittest.main()
